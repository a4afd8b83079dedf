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
// Where the model can split a layer between its halves (StageCosts::first_half),
// balanced_half_split then moves boundaries by half a layer: 2.5 + 1.5 and 1.5, 1, 1.5, 0.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "placement.hpp"

namespace trident::pp {

// Cost of one sequence through a virtual stage's parts. first_half: the part of a layer's cost
// in its first half (a decoder block's attention, nn/block_halves.hpp) when the model can put a
// stage boundary between a layer's halves; 0 when its layers run whole.
struct StageCosts {
  double layer = 0, embedding = 0, head = 0, first_half = 0;
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
      rank_fixed[r] += fixed[r].back();
      rank_count[r] += count[r].back();
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

// Cost of the half layers [begin, end): half 2l is layer l's first half, 2l + 1 its second.
inline double half_layers_cost(const StageCosts& c, int begin, int end) {
  double sum = 0;
  for (int h = begin; h < end; ++h) sum += h % 2 == 0 ? c.first_half : c.layer - c.first_half;
  return sum;
}

// Cost of each virtual stage of a split into half layers (the embedding's and head's counted).
inline std::vector<double> half_split_costs(const StageCosts& c, const std::vector<int>& halves) {
  const int stages = static_cast<int>(halves.size());
  std::vector<double> out;
  for (int g = 0, begin = 0; g < stages; begin += halves[g], ++g)
    out.push_back(virtual_stage_cost(c, g, stages, 0) +
                  half_layers_cost(c, begin, begin + halves[g]));
  return out;
}

// Cost of each pipeline rank (map.stages of them): the sum of its chunks' (virtual stages').
inline std::vector<double> rank_costs(const StageCosts& c, const std::vector<int>& halves,
                                      const ChunkMap& map) {
  std::vector<double> out(map.stages, 0);
  const std::vector<double> cost = half_split_costs(c, halves);
  for (std::size_t g = 0; g < cost.size(); ++g) out[map.rank(int(g))] += cost[g];
  return out;
}

// Half layers of each virtual stage (as balanced_layer_split's, placed by map): that split,
// doubled; then, when the model can split a layer between its halves (c.first_half > 0), any
// boundary between two virtual stages moved by half a layer while that makes the costliest
// rank cheaper (or, as costly, the costliest virtual stage). On the bench model a boundary moves
// into a block (its attention half 0.385 of its cost): 2 stages 2.5 + 1.5 layers (2.38 and
// 2.85 layers' cost, not 3 and 2.23); ZB-V 1.5, 1, 1.5, 0 (both ranks 2.62).
inline std::vector<int> balanced_half_split(const StageCosts& c, int L, const ChunkMap& map) {
  std::vector<int> halves = balanced_layer_split(c, L, map);
  for (int& n : halves) n *= 2;
  if (c.first_half <= 0) return halves;
  const int stages = static_cast<int>(halves.size());
  struct Score {
    double rank = 0, stage = 0;  // the costliest rank's and virtual stage's
  };
  auto score = [&](const std::vector<int>& split) {
    const std::vector<double> rank = rank_costs(c, split, map), stage = half_split_costs(c, split);
    return Score{*std::max_element(rank.begin(), rank.end()),
                 *std::max_element(stage.begin(), stage.end())};
  };
  const double eps = 1e-9 * (L * c.layer + c.embedding + c.head);  // below any real difference
  auto better = [&](const Score& a, const Score& b) {
    return a.rank < b.rank - eps || (a.rank < b.rank + eps && a.stage < b.stage - eps);
  };
  for (bool moved = true; moved;) {
    moved = false;
    for (int g = 0; g + 1 < stages; ++g)
      for (int step : {-1, 1}) {
        std::vector<int> t = halves;
        t[g] += step;
        t[g + 1] -= step;
        if (t[g] < 1 || t[g + 1] < (g + 1 == stages - 1 ? 0 : 1)) continue;
        if (better(score(t), score(halves))) {
          halves = t;
          moved = true;
        }
      }
  }
  return halves;
}

// A split of half layers as layers, joined by sep: {5, 3} -> "2.5+1.5".
inline std::string half_split_text(const std::vector<int>& halves, const std::string& sep = "+") {
  std::string out;
  for (std::size_t g = 0; g < halves.size(); ++g)
    out += (g ? sep : "") + std::to_string(halves[g] / 2) + (halves[g] % 2 ? ".5" : "");
  return out;
}

// Plain pipeline stages (one chunk per rank).
inline std::vector<int> balanced_layer_split(const StageCosts& c, int L, int stages) {
  return balanced_layer_split(c, L, ChunkMap{ChunkPlacement::looped, stages, 1});
}

}  // namespace trident::pp
