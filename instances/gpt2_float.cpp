// instances/gpt2_float.cpp: GPT-2's trainer in float, compiled once for trident's programs
// (instances/gpt2_trainer.hpp, docs/ARCHITECTURE.md §9).
#include "gpt2_trainer.hpp"

namespace trident::instances {

template <class T, class S>
Gpt2Trainer<T, S>::Gpt2Trainer(const Comm& world, const gpt2::Options& o, TokenSource data)
    : gpt2::Trainer<T, S>(world, o, std::move(data)) {}
template <class T, class S>
Gpt2Trainer<T, S>::~Gpt2Trainer() = default;
template <class T, class S>
StepResult Gpt2Trainer<T, S>::step() {
  return gpt2::Trainer<T, S>::step();
}

template class Gpt2Trainer<float>;

}  // namespace trident::instances

template trident::costmodel::MeasuredRun trident::costmodel::measure_run<float, float>(
    const trident::Comm&, const trident::gpt2::Options&, const trident::TokenSource&, int, int);
