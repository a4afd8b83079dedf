// trident/models/gpt2/trainer.hpp: the generic trainer (train/trainer.hpp) with GPT-2, for
// programs that train GPT-2: gpt2::Options is a run's options with the model's shape, and
// gpt2::Trainer<T, S> is Trainer<gpt2::Model, T, S> built from them.
#pragma once

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

// trident's own programs link GPT-2's trainers and the tools run on them, compiled once in
// instances/gpt2.cpp (train/prebuilt.hpp, docs/ARCHITECTURE.md §9).
#ifdef TRIDENT_PREBUILT_INSTANCES
#include "../../train/prebuilt.hpp"

#define TRIDENT_GPT2_INSTANCES(how, T, S)                     \
  TRIDENT_TRAINER_INSTANCES(how, trident::gpt2::Model, T, S); \
  TRIDENT_TRAINER_TOOL_INSTANCES(how, trident::gpt2::Model, T, S)

TRIDENT_GPT2_INSTANCES(extern template, float, float);
TRIDENT_GPT2_INSTANCES(extern template, double, double);
TRIDENT_GPT2_INSTANCES(extern template, float, trident::bf16);
#endif
