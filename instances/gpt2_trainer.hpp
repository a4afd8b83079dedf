// instances/gpt2_trainer.hpp: GPT-2's trainer compiled once for trident's own programs
// (examples, benchmarks), not once in each (docs/ARCHITECTURE.md §9). Not part of the installed,
// header-only library: a user's program instantiates gpt2::Trainer itself.
//
// The trainer's members are defined in its class, so they are inline, and GCC instantiates
// inline members for inlining even under `extern template`. Gpt2Trainer hides the heavy ones
// (construction, destruction, step) behind members defined only in gpt2_<type>.cpp: a program
// that holds a Gpt2Trainer compiles none of the trainer's step. measure_run is a non-inline
// function template, so `extern template` keeps it out of the programs that call it.
#pragma once

#include <trident/costmodel/measured.hpp>
#include <trident/models/gpt2/trainer.hpp>

namespace trident::instances {

template <class T, class S = T>
class Gpt2Trainer : public gpt2::Trainer<T, S> {
 public:
  Gpt2Trainer(const Comm& world, const gpt2::Options& o, TokenSource data);
  ~Gpt2Trainer();
  StepResult step();  // gpt2::Trainer<T, S>::step()
};

extern template class Gpt2Trainer<float>;

}  // namespace trident::instances

namespace trident::costmodel {
extern template MeasuredRun measure_run<float, float>(const Comm&, const gpt2::Options&,
                                                      const TokenSource&, int, int);
}  // namespace trident::costmodel
