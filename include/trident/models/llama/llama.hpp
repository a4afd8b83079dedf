// trident/models/llama/llama.hpp: a Llama-style decoder on trident — the model (model.hpp) and
// its trainer: the generic Trainer (train/trainer.hpp) over it, with no wrapper.
#pragma once

#include "../../backend/emulated/emulated.hpp"
#include "../../train/trainer.hpp"
#include "model.hpp"

namespace trident::llama {

template <class T, class S = T, class B = backend::Cpu>
using Trainer = trident::Trainer<Model, T, S, B>;

}  // namespace trident::llama

// trident's own programs link Llama's trainers and their run report, compiled once in
// instances/llama.cpp and instances/llama_emulated.cpp (train/prebuilt.hpp, docs/ARCHITECTURE.md
// §9).
#ifdef TRIDENT_PREBUILT_INSTANCES
#include "../../core/bf16.hpp"
#include "../../train/prebuilt.hpp"

#define TRIDENT_LLAMA_INSTANCES(how, B)                                     \
  TRIDENT_TRAINER_INSTANCES(how, trident::llama::Model, float, float, B);   \
  TRIDENT_TRAINER_INSTANCES(how, trident::llama::Model, double, double, B); \
  TRIDENT_TRAINER_INSTANCES(how, trident::llama::Model, float, trident::bf16, B)

TRIDENT_LLAMA_INSTANCES(extern template, trident::backend::Cpu);
TRIDENT_LLAMA_INSTANCES(extern template, trident::backend::Emulated);
#endif
