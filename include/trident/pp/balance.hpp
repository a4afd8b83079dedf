// trident/pp/balance.hpp: pipeline stages balanced by cost (`--pp-layers auto`).
//
// A virtual stage's cost per microbatch is its layers' cost, plus the embedding's on the first
// virtual stage and the head's on the last; the model gives the three (model/model.hpp,
// stage_costs: forward FLOPs of one sequence, which stand for all three passes since the
// backward is twice the forward). A pipeline rank's cost is the sum of its chunks' (the virtual
// stages it holds, placement.hpp): the rank is busy for all of them, so the costliest rank sets
// the step. The split first gives each rank its number of layers, so that the costliest rank is
// as cheap as can be, then shares each rank's layers among its chunks the same way. Both by
// water-filling: one layer at a time to whichever makes the new cost smallest (which minimises
// the largest cost, each cost growing by one layer's per layer); on a tie the later rank or
// chunk, so that earlier stages (which hold more microbatches' activations under 1F1B) get
// fewer layers. Every virtual stage gets at least 1 layer but the last, which may hold the head
// alone (the first embeds and would pass its output on unchanged; a middle one with none would
// only pass its input on).
// On the bench model (V=4096, h=256, s=128, L=4) the head weighs 1.23 layers: 2 stages get
// 3 + 1 layers instead of 2 + 2; ZB-V's V (rank 0 holds virtual stages 0 and 3, the embedding
// and the head) gets 1, 1, 2, 0: rank 0 runs 1 layer and the head (2.23), rank 1 3 layers.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "placement.hpp"

namespace trident::pp {

// Cost of one sequence through a virtual stage's parts.
struct StageCosts {
  double layer = 0, embedding = 0, head = 0;
};

// Cost of virtual stage g (of `stages`) holding `layers` layers.
inline double virtual_stage_cost(const StageCosts& c, int g, int stages, int layers) {
  return layers * c.layer + (g == 0 ? c.embedding : 0) + (g == stages - 1 ? c.head : 0);
}

namespace detail {
// Water-filling: `layers` more layers onto parts with costs fixed[i] + count[i] * layer, one at
// a time to the part whose new cost is the smallest (the last such part on a tie).
inline void fill_layers(std::vector<int>& count, const std::vector<double>& fixed, double layer,
                        int layers) {
  for (; layers > 0; --layers) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < count.size(); ++i)
      if (fixed[i] + (count[i] + 1) * layer <= fixed[best] + (count[best] + 1) * layer) best = i;
    ++count[best];
  }
}
}  // namespace detail

// Layers of each virtual stage g = 0 .. p v - 1 (p = map.stages ranks of v = map.chunks chunks,
// placed as map says) of a model of L layers costing c: the costliest rank as cheap as can be,
// then within each rank the costliest chunk.
inline std::vector<int> balanced_layer_split(const StageCosts& c, int L, const ChunkMap& map) {
  const int stages = map.virtual_stages();
  require(stages >= 1 && stages <= L + 1, "balanced_layer_split: " + std::to_string(stages) +
                                              " stages for " + std::to_string(L) + " layers");
  // each rank's chunks' fixed costs and least layers (1 per chunk, 0 for the head's alone)
  std::vector<std::vector<double>> fixed(map.stages);
  std::vector<std::vector<int>> count(map.stages);
  std::vector<double> rank_fixed(map.stages, 0);
  std::vector<int> rank_count(map.stages, 0);
  int left = L;
  for (int r = 0; r < map.stages; ++r)
    for (int k = 0; k < map.chunks; ++k) {
      const int g = map.virtual_stage(k, r);
      fixed[r].push_back(virtual_stage_cost(c, g, stages, 0));
      count[r].push_back(g == stages - 1 ? 0 : 1);
      rank_fixed[r] += fixed[r].back(), rank_count[r] += count[r].back();
      left -= count[r].back();
    }
  require(left >= 0, "balanced_layer_split: " + std::to_string(stages) + " stages for " +
                         std::to_string(L) + " layers");
  std::vector<int> start = rank_count;
  detail::fill_layers(rank_count, rank_fixed, c.layer, left);
  std::vector<int> split(stages);
  for (int r = 0; r < map.stages; ++r) {
    detail::fill_layers(count[r], fixed[r], c.layer, rank_count[r] - start[r]);
    for (int k = 0; k < map.chunks; ++k) split[map.virtual_stage(k, r)] = count[r][k];
  }
  return split;
}

// Plain pipeline stages (one chunk per rank).
inline std::vector<int> balanced_layer_split(const StageCosts& c, int L, int stages) {
  return balanced_layer_split(c, L, ChunkMap{Placement::looped, stages, 1});
}

}  // namespace trident::pp
