// trident/pp/balance.hpp: pipeline stages balanced by cost (`--pp-layers auto`).
//
// A virtual stage's cost per microbatch is its layers' cost, plus the embedding's on the first
// virtual stage and the head's on the last; the model gives the three (model/model.hpp,
// stage_costs: forward FLOPs of one sequence, which stand for all three passes since the
// backward is twice the forward). The split minimises the most expensive virtual stage, by
// dynamic programming over (virtual stage, layers placed); of equally good splits, the one
// with fewer layers on earlier stages (which hold more microbatches' activations under 1F1B).
// With an even cost per stage as the target, the head's stage gets fewer layers: on the bench
// model (V=4096, h=256, s=128, L=4) the head weighs 1.23 layers, and 2 stages get 3 + 1
// layers instead of 2 + 2.
#pragma once

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "../core/error.hpp"

namespace trident::pp {

// Cost of one sequence through a virtual stage's parts.
struct StageCosts {
  double layer = 0, embedding = 0, head = 0;
};

// Cost of virtual stage g (of `stages`) holding `layers` layers.
inline double virtual_stage_cost(const StageCosts& c, int g, int stages, int layers) {
  return layers * c.layer + (g == 0 ? c.embedding : 0) + (g == stages - 1 ? c.head : 0);
}

// Layers of each of `stages` virtual stages (at least 1 each) of a model of L layers costing c,
// minimising the largest cost.
inline std::vector<int> balanced_layer_split(const StageCosts& c, int L, int stages) {
  require(stages >= 1 && stages <= L, "balanced_layer_split: " + std::to_string(stages) +
                                          " stages for " + std::to_string(L) + " layers");
  const double inf = std::numeric_limits<double>::infinity();
  // worst[g][l]: the least largest cost of placing l layers on stages 0..g; take[g][l]: stage g's
  std::vector<std::vector<double>> worst(stages, std::vector<double>(L + 1, inf));
  std::vector<std::vector<int>> take(stages, std::vector<int>(L + 1, 0));
  for (int l = 1; l <= L; ++l) worst[0][l] = virtual_stage_cost(c, 0, stages, l), take[0][l] = l;
  for (int g = 1; g < stages; ++g)
    for (int l = g + 1; l <= L; ++l)
      for (int k = l - g; k >= 1; --k) {  // most layers on stage g first: fewer on earlier ones
        const double w = std::max(worst[g - 1][l - k], virtual_stage_cost(c, g, stages, k));
        if (w < worst[g][l]) worst[g][l] = w, take[g][l] = k;
      }
  std::vector<int> split(stages);
  for (int g = stages - 1, l = L; g >= 0; l -= split[g], --g) split[g] = take[g][l];
  return split;
}

}  // namespace trident::pp
