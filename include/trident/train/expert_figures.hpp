// trident/train/expert_figures.hpp: a mixture of experts' figures of one step, over the whole
// run — the load-balancing loss its blocks added (Switch Transformer eq. 4, in the loss's units)
// and the expert load: per MoE layer, the busiest expert's routed tokens over the mean (1:
// balanced; Fedus et al. 2021 §2.2), the largest over the layers — from each stage's
// LayerFigures (model/decoder_stage.hpp), summed over microbatches, DP replicas and stages.
#pragma once

#include <algorithm>
#include <type_traits>
#include <vector>

#include "../core/comm.hpp"

namespace trident {

// The number of experts of a model that declares experts() (0: a dense model, or none declared).
template <class M, class = void>
struct declares_experts : std::false_type {};
template <class M>
struct declares_experts<M, std::void_t<decltype(std::declval<const M&>().experts())>>
    : std::true_type {};
template <class M>
int model_experts(const M& model) {
  if constexpr (declares_experts<M>::value)
    return model.experts();
  else
    return 0;
}

struct ExpertFigures {
  double aux_loss = 0;     // the blocks' loss terms, summed over the run
  double expert_load = 0;  // max over MoE layers of max / mean tokens per expert
};

// Collective over world. chunks: this rank's stages (take_layer_figures); counts: whether this
// rank's figures count (TP rank 0: its TP peers computed the same); layers, experts: the model's.
template <class Chunks>
ExpertFigures expert_figures(const Comm& world, Chunks& chunks, bool counts, int layers,
                             int experts) {
  double terms = 0;
  std::vector<double> tokens(std::size_t(layers) * experts, 0.0);  // (L, E)
  for (auto& c : chunks) {
    const auto f = c->take_layer_figures();
    if (!counts) continue;
    terms += f.loss_terms;
    for (const auto& [layer, per_expert] : f.expert_tokens)
      for (std::size_t e = 0; e < per_expert.size(); ++e)
        tokens[std::size_t(layer) * experts + e] += per_expert[e];
  }
  ExpertFigures out;
  out.aux_loss = world.all_reduce_value(terms);
  world.all_reduce(Span<double>(tokens));
  for (int l = 0; l < layers; ++l) {
    const auto first = tokens.begin() + std::ptrdiff_t(l) * experts;
    double sum = 0;
    for (auto it = first; it != first + experts; ++it) sum += *it;
    if (sum > 0)
      out.expert_load =
          std::max(out.expert_load, *std::max_element(first, first + experts) * experts / sum);
  }
  return out;
}

}  // namespace trident
