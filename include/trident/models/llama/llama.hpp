// trident/models/llama/llama.hpp: a Llama-style decoder on trident — the model (model.hpp) and
// its trainer: the generic Trainer (train/trainer.hpp) over it, with no wrapper.
#pragma once

#include "../../train/trainer.hpp"
#include "model.hpp"

namespace trident::llama {

template <class T, class S = T>
using Trainer = trident::Trainer<Model, T, S>;

}  // namespace trident::llama
