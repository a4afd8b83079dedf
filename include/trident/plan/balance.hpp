// trident/plan/balance.hpp: pipeline stages balanced by the cost model (`--pp-layers auto`).
//
// A virtual stage's cost per microbatch is its GEMM FLOPs as compute.hpp counts them (Narayanan
// et al. 2021 §5.1; the backward is twice the forward, so the forward's FLOPs stand for all
// three passes): each layer 24 b s h^2 + 4 b s^2 h, the LM head and loss 2 b s h V on the last
// virtual stage, and the embedding, a table lookup with no GEMM, 0 on the first. The split
// (pp/balance.hpp) minimises the most expensive pipeline rank, here plain stages and whole
// layers (the papers' split; trident's own models also move a boundary between a block's
// halves where that is cheaper: pp::balanced_half_split).
#pragma once

#include <vector>

#include "../pp/balance.hpp"
#include "compute.hpp"
#include "model_spec.hpp"

namespace trident::plan {

// Forward FLOPs of one sequence through a virtual stage's parts.
inline pp::StageCosts stage_costs(const ModelSpec& m) {
  return {layer_forward_flops(m, 1), 0.0, head_forward_flops(m, 1)};
}

inline std::vector<int> balanced_layer_split(const ModelSpec& m, int stages) {
  return pp::balanced_layer_split(stage_costs(m), m.layers, stages);
}

}  // namespace trident::plan
