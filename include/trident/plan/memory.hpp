// trident/plan/memory.hpp: bytes per GPU: model states under ZeRO, and activations.
//
// Model states (parameters, gradients, optimizer states) follow the ZeRO paper (formulas.hpp's
// model_state_bytes), with Psi the parameters of one model-parallel shard; activations follow
// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models") per
// layer, times the layers a pipeline stage holds at its peak. Each function is one term, so a
// caller can compare it with a measurement on its own. Under context parallelism a rank holds
// s / cp tokens of each sequence: Korthikanti's s b h becomes (s / cp) b h, while the attention
// scores keep one row per local query over all s keys; ZeRO partitions over DP x CP.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "cluster.hpp"
#include "config.hpp"
#include "formulas.hpp"
#include "model_spec.hpp"

namespace trident::plan {

// GB (1e9 bytes) printed as the ZeRO paper's Table 1 does: three significant digits, at most
// two decimals, halves rounded up (120, 31.4, 16.6, 1.88, 0.47).
inline std::string paper_gb(double bytes) {
  const double gb = bytes / 1e9;
  const int decimals = gb >= 99.95 ? 0 : gb >= 9.995 ? 1 : 2;
  const double scale = std::pow(10.0, decimals);
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, std::round(gb * scale) / scale);
  std::string s = text;
  if (s.find('.') != std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

// ZeRO-3's working parameters: the unit being computed and the one prefetched, gathered whole
// (over DP), plus the whole gradient of the unit before its reduce-scatter. A unit is a layer
// or the embedding, whichever is larger.
inline double zero3_buffer_bytes(const ModelSpec& m, const Config& c, const Precision& p) {
  if (!c.zero_policy().shards_parameters() || c.dp * c.cp == 1) return 0;
  const double unit = static_cast<double>(
      std::max(layer_shard_parameters(m, c.tp), embedding_shard_parameters(m, c.tp)));
  return (2 * p.param_bytes + p.grad_bytes) * unit;
}

// Korthikanti et al. 2022, Table 2: bytes one transformer layer keeps for its backward, per
// microbatch of b sequences (16-bit activations, 1-byte dropout masks):
//   tensor parallel              s b h (10 + 24/t + 5 a s / (h t))   (t = 1: no parallelism,
//   tensor + sequence parallel   s b h (34/t + 5 a s / (h t))          s b h (34 + 5 a s / h))
//   selective recomputation      the 5 a s / (h t) term is dropped (§5: softmax(QK^T)V redone)
//   full recomputation           2 s b h (only the layer's input)
// Scaled by activation_bytes / 2 for other precisions; under CP the leading s is s / cp.
inline double layer_activation_bytes(const ModelSpec& m, const Config& c, const Precision& p) {
  const double s = m.seq, b = c.microbatch_size, h = m.hidden, a = m.heads, t = c.tp;
  const double sbh = s / c.cp * b * h * p.activation_bytes / 2;
  if (c.recompute == Recompute::full) return 2 * sbh;
  const double linear = c.sequence_parallel ? 34 / t : 10 + 24 / t;
  const double attention = c.recompute == Recompute::selective ? 0 : 5 * a * s / (h * t);
  return sbh * (linear + attention);
}

// Memory a recomputation needs while it runs, for one layer of one microbatch: full
// recomputation rebuilds all of the layer's activations, selective its attention scores.
inline double recompute_working_bytes(const ModelSpec& m, const Config& c, const Precision& p) {
  Config none = c;
  none.recompute = Recompute::none;
  if (c.recompute == Recompute::full) return layer_activation_bytes(m, none, p);
  if (c.recompute == Recompute::selective)
    return layer_activation_bytes(m, none, p) - layer_activation_bytes(m, c, p);
  return 0;
}

// Microbatches of a whole stage's layers the most loaded pipeline stage holds at its peak
// (Korthikanti et al. 2022, §4.2.3; the schedule's traits): GPipe all m; 1F1B the p of its
// first stage's warm-up (fewer when m < p); the interleaved schedule p + (p-1)/v.
inline double microbatches_in_flight(const Config& c) {
  return pp::traits(c.schedule).peak_in_flight(c.pp, c.microbatches, c.virtual_stages);
}

// Layers' worth of one microbatch's activations the first stage holds at its peak: L/p layers
// per microbatch in flight. With 1F1B that is L whatever p (§4.2.3); the interleaved schedule
// holds L (1 + (p-1)/(p v)) (§4.2.3, v model chunks per rank).
inline double activation_layers_in_flight(const ModelSpec& m, const Config& c) {
  return static_cast<double>(m.layers) / c.pp * microbatches_in_flight(c);
}

// Korthikanti et al. 2022, §4.3: the input embedding's dropout mask, s b h p / t with sequence
// parallelism, s b h p without (p the microbatches in flight), and the output layer: its
// LayerNorm, the LM head's input and the fp32 logits, 4 s b h / t (1 + V / h). Both are counted
// at the first stage's peak: exact for p = 1, a small overestimate otherwise.
inline double embedding_and_output_activation_bytes(const ModelSpec& m, const Config& c) {
  const double sbh = static_cast<double>(m.seq) / c.cp * c.microbatch_size * m.hidden, t = c.tp;
  const double dropout = sbh * microbatches_in_flight(c) / (c.sequence_parallel ? t : 1);
  return dropout + 4 * sbh / t * (1 + static_cast<double>(m.vocab) / m.hidden);
}

// The first pipeline stage's peak activation memory.
inline double activation_bytes(const ModelSpec& m, const Config& c, const Precision& p) {
  return activation_layers_in_flight(m, c) * layer_activation_bytes(m, c, p) +
         recompute_working_bytes(m, c, p) + embedding_and_output_activation_bytes(m, c);
}

struct MemoryBytes {
  double params = 0, grads = 0, optimizer = 0;  // ZeRO's model states
  double zero3_buffers = 0;                     // gathered ZeRO-3 units
  double activations = 0;
  double total() const { return params + grads + optimizer + zero3_buffers + activations; }
};

// Everything one GPU of the most loaded stage holds.
inline MemoryBytes memory_bytes(const ModelSpec& m, const Config& c, const Precision& p) {
  const double psi = static_cast<double>(shard_parameters(m, c.tp, c.pp));
  const ModelStateBytes states = model_state_bytes(psi, c.zero_policy(), c.dp * c.cp, p);
  return {states.params, states.grads, states.optimizer, zero3_buffer_bytes(m, c, p),
          activation_bytes(m, c, p)};
}

}  // namespace trident::plan
