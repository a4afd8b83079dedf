// trident/models/gpt2/trainer.hpp: the generic trainer (train/trainer.hpp) with GPT-2, for
// programs that train GPT-2: gpt2::Options is a run's options with the model's shape, and
// gpt2::Trainer<T, S> is Trainer<gpt2::Model, T, S> built from them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../train/trainer.hpp"
#include "model.hpp"

namespace trident::gpt2 {

struct Options : TrainOptions {
  Config model;
};

inline void validate(const Options& o, int world_size) {
  trident::validate(Model(o.model), o, world_size);
}
inline std::vector<int> layer_split(const Options& o) {
  return trident::layer_split(Model(o.model), o);
}

template <class T, class S = T>
class Trainer : public trident::Trainer<Model, T, S> {
 public:
  Trainer(const Comm& world, const Options& o, TokenSource data)
      : trident::Trainer<Model, T, S>(world, Model(o.model), o, std::move(data)), o_(o) {}
  const Options& options() const { return o_; }

 private:
  Options o_;
};

}  // namespace trident::gpt2

// trident's own programs (its tests, examples and benchmarks) are built with
// TRIDENT_PREBUILT_INSTANCES and link these, compiled once in instances/ instead of once in each
// program (docs/ARCHITECTURE.md §9): the trainer and the tools a program runs on it (held-out
// loss, sampling, checkpoints, weights, the report). The tools are declared here (defined in
// train/ and io/), so that a program does not parse io/ to skip compiling them. A user's
// program instantiates what it uses.
#ifdef TRIDENT_PREBUILT_INSTANCES
namespace trident {
struct SampleOptions;
struct RunReport;
template <class M, class T, class S>
double evaluate(Trainer<M, T, S>& t, const TokenSource& held_out, int batches);
template <class M, class T, class S>
std::vector<std::int32_t> sample(Trainer<M, T, S>& t, const std::vector<std::int32_t>& prompt,
                                 const SampleOptions& s);
template <class M, class T, class S>
RunReport make_report(Trainer<M, T, S>& t, const std::vector<StepResult>& measured);
template <class M, class T, class S>
std::string save_checkpoint(Trainer<M, T, S>& t, const std::string& dir, int keep);
template <class M, class T, class S>
std::string load_checkpoint(Trainer<M, T, S>& t, const std::string& path);
template <class M, class T, class S>
std::string resume_training(Trainer<M, T, S>& t, const std::string& path, bool fresh_if_none);
template <class M, class T, class S>
void save_weights(Trainer<M, T, S>& t, const std::string& path);
template <class M, class T, class S>
void load_weights(Trainer<M, T, S>& t, const std::string& path);
template <class M, class T, class S>
StepResult dump_gradients_and_step(Trainer<M, T, S>& t, const TokenSource& data,
                                   const std::string& path);
}  // namespace trident

// The instances for compute type T and storage type S, each after `how`: `extern template` here,
// `template` in instances/gpt2_*.cpp, which define them.
#define TRIDENT_GPT2_INSTANCES(how, T, S)                                                      \
  how class trident::Trainer<trident::gpt2::Model, T, S>;                                      \
  how double trident::evaluate(trident::Trainer<trident::gpt2::Model, T, S>&,                  \
                               const trident::TokenSource&, int);                              \
  how std::vector<std::int32_t> trident::sample(trident::Trainer<trident::gpt2::Model, T, S>&, \
                                                const std::vector<std::int32_t>&,              \
                                                const trident::SampleOptions&);                \
  how trident::RunReport trident::make_report(trident::Trainer<trident::gpt2::Model, T, S>&,   \
                                              const std::vector<trident::StepResult>&);        \
  how std::string trident::save_checkpoint(trident::Trainer<trident::gpt2::Model, T, S>&,      \
                                           const std::string&, int);                           \
  how std::string trident::load_checkpoint(trident::Trainer<trident::gpt2::Model, T, S>&,      \
                                           const std::string&);                                \
  how std::string trident::resume_training(trident::Trainer<trident::gpt2::Model, T, S>&,      \
                                           const std::string&, bool);                          \
  how void trident::save_weights(trident::Trainer<trident::gpt2::Model, T, S>&,                \
                                 const std::string&);                                          \
  how void trident::load_weights(trident::Trainer<trident::gpt2::Model, T, S>&,                \
                                 const std::string&);                                          \
  how trident::StepResult trident::dump_gradients_and_step(                                    \
      trident::Trainer<trident::gpt2::Model, T, S>&, const trident::TokenSource&,              \
      const std::string&)

TRIDENT_GPT2_INSTANCES(extern template, float, float);
TRIDENT_GPT2_INSTANCES(extern template, double, double);
TRIDENT_GPT2_INSTANCES(extern template, float, trident::bf16);
#endif
