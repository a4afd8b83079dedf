// trident/train/prebuilt.hpp: the trainer instances trident's own programs link instead of
// compiling (docs/BUILD.md). trident's tests, examples and benchmarks are built with
// TRIDENT_PREBUILT_INSTANCES: a model's trainer header then declares its trainers `extern
// template` through the macros below, and instances/ defines them, once. The tools run on a
// trainer (held-out loss, sampling, checkpoints, weights) are declared here, defined in train/
// and io/, so that a program that includes a trainer does not parse io/ to skip compiling them.
// A user's program does not define the macro and instantiates what it uses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer.hpp"

namespace trident {
struct SampleOptions;
struct RunReport;
template <class M, class T, class S, class B>
RunReport make_report(Trainer<M, T, S, B>& t, const std::vector<StepResult>& measured);
template <class M, class T, class S, class B>
double evaluate(Trainer<M, T, S, B>& t, const TokenSource& held_out, int batches);
template <class M, class T, class S, class B>
std::vector<std::int32_t> sample(Trainer<M, T, S, B>& t, const std::vector<std::int32_t>& prompt,
                                 const SampleOptions& s);
template <class M, class T, class S, class B>
std::string save_checkpoint(Trainer<M, T, S, B>& t, const std::string& dir, int keep);
template <class M, class T, class S, class B>
std::string load_checkpoint(Trainer<M, T, S, B>& t, const std::string& path);
template <class M, class T, class S, class B>
std::string resume_training(Trainer<M, T, S, B>& t, const std::string& path, bool fresh_if_none);
template <class M, class T, class S, class B>
void save_weights(Trainer<M, T, S, B>& t, const std::string& path);
template <class M, class T, class S, class B>
void load_weights(Trainer<M, T, S, B>& t, const std::string& path);
template <class M, class T, class S, class B>
StepResult dump_gradients_and_step(Trainer<M, T, S, B>& t, const TokenSource& data,
                                   const std::string& path);
}  // namespace trident

// The trainer of model M with compute type T and storage type S, and its run report, after
// `how`: `extern template` in the model's header, `template` in instances/. A signature that
// drifts from its definition declares a second template, which instances/ cannot instantiate:
// a compile error, never a silent copy.
#define TRIDENT_TRAINER_INSTANCES(how, M, T, S, B)                           \
  how class trident::Trainer<M, T, S, B>;                                    \
  how trident::RunReport trident::make_report(trident::Trainer<M, T, S, B>&, \
                                              const std::vector<trident::StepResult>&)

// The tools on that trainer: held-out loss, sampling, checkpoints, weights, gradient dumps.
#define TRIDENT_TRAINER_TOOL_INSTANCES(how, M, T, S, B)                                          \
  how double trident::evaluate(trident::Trainer<M, T, S, B>&, const trident::TokenSource&, int); \
  how std::vector<std::int32_t> trident::sample(trident::Trainer<M, T, S, B>&,                   \
                                                const std::vector<std::int32_t>&,                \
                                                const trident::SampleOptions&);                  \
  how std::string trident::save_checkpoint(trident::Trainer<M, T, S, B>&, const std::string&,    \
                                           int);                                                 \
  how std::string trident::load_checkpoint(trident::Trainer<M, T, S, B>&, const std::string&);   \
  how std::string trident::resume_training(trident::Trainer<M, T, S, B>&, const std::string&,    \
                                           bool);                                                \
  how void trident::save_weights(trident::Trainer<M, T, S, B>&, const std::string&);             \
  how void trident::load_weights(trident::Trainer<M, T, S, B>&, const std::string&);             \
  how trident::StepResult trident::dump_gradients_and_step(                                      \
      trident::Trainer<M, T, S, B>&, const trident::TokenSource&, const std::string&)
