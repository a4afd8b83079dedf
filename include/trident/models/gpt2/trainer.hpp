// trident/models/gpt2/trainer.hpp: the generic trainer (train/trainer.hpp) with GPT-2, for
// programs that train GPT-2: gpt2::Options is a run's options with the model's shape, and
// gpt2::Trainer<T, S, B> is Trainer<gpt2::Model, T, S, B> built from them (B: the backend,
// backend::Cpu by default).
#pragma once

#include <vector>

#include "../../backend/emulated/emulated.hpp"
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

template <class T, class S = T, class B = backend::Cpu>
class Trainer : public trident::Trainer<Model, T, S, B> {
 public:
  Trainer(const Comm& world, const Options& o, TokenSource data)
      : trident::Trainer<Model, T, S, B>(world, Model(o.model), o, std::move(data)), o_(o) {}
  const Options& options() const { return o_; }

 private:
  Options o_;
};

}  // namespace trident::gpt2

// trident's own programs link GPT-2's trainers and the tools run on them, compiled once in
// instances/gpt2.cpp (the CPU) and instances/gpt2_emulated.cpp (the emulated device)
// (train/prebuilt.hpp, docs/BUILD.md).
#ifdef TRIDENT_PREBUILT_INSTANCES
#include "../../train/prebuilt.hpp"

#define TRIDENT_GPT2_INSTANCES(how, T, S, B)                     \
  TRIDENT_TRAINER_INSTANCES(how, trident::gpt2::Model, T, S, B); \
  TRIDENT_TRAINER_TOOL_INSTANCES(how, trident::gpt2::Model, T, S, B)
// The three element types (float, double, float with bf16 storage) on backend B.
#define TRIDENT_GPT2_BACKEND_INSTANCES(how, B)    \
  TRIDENT_GPT2_INSTANCES(how, float, float, B);   \
  TRIDENT_GPT2_INSTANCES(how, double, double, B); \
  TRIDENT_GPT2_INSTANCES(how, float, trident::bf16, B)

TRIDENT_GPT2_BACKEND_INSTANCES(extern template, trident::backend::Cpu);
TRIDENT_GPT2_BACKEND_INSTANCES(extern template, trident::backend::Emulated);
#endif
