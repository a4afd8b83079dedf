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

// trident's own programs link Llama's trainers, their run report and the tools run on them
// (io/train_program.hpp's: checkpoints, weights, evaluation, sampling), compiled once in
// instances/llama.cpp and instances/llama_emulated.cpp (train/prebuilt.hpp, docs/ARCHITECTURE.md
// §9).
#ifdef TRIDENT_PREBUILT_INSTANCES
#include "../../core/bf16.hpp"
#include "../../train/prebuilt.hpp"

#define TRIDENT_LLAMA_TYPE_INSTANCES(how, T, S, B)                \
  TRIDENT_TRAINER_INSTANCES(how, trident::llama::Model, T, S, B); \
  TRIDENT_TRAINER_TOOL_INSTANCES(how, trident::llama::Model, T, S, B)
#define TRIDENT_LLAMA_INSTANCES(how, B)                 \
  TRIDENT_LLAMA_TYPE_INSTANCES(how, float, float, B);   \
  TRIDENT_LLAMA_TYPE_INSTANCES(how, double, double, B); \
  TRIDENT_LLAMA_TYPE_INSTANCES(how, float, trident::bf16, B)

TRIDENT_LLAMA_INSTANCES(extern template, trident::backend::Cpu);
TRIDENT_LLAMA_INSTANCES(extern template, trident::backend::Emulated);
#endif
