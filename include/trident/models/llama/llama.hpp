// trident/models/llama/llama.hpp: a Llama-style decoder on trident — the model (model.hpp) and
// its trainer: the generic Trainer (train/trainer.hpp) over it, with no wrapper.
#pragma once

#include "../../train/trainer.hpp"
#include "model.hpp"

namespace trident::llama {

template <class T, class S = T>
using Trainer = trident::Trainer<Model, T, S>;

}  // namespace trident::llama

// trident's own programs link Llama's trainers and their run report, compiled once in
// instances/llama.cpp (train/prebuilt.hpp, docs/ARCHITECTURE.md §9).
#ifdef TRIDENT_PREBUILT_INSTANCES
#include "../../core/bf16.hpp"
#include "../../train/prebuilt.hpp"

TRIDENT_TRAINER_INSTANCES(extern template, trident::llama::Model, float, float);
TRIDENT_TRAINER_INSTANCES(extern template, trident::llama::Model, double, double);
TRIDENT_TRAINER_INSTANCES(extern template, trident::llama::Model, float, trident::bf16);
#endif
