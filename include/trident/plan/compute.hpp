// trident/plan/compute.hpp: the arithmetic of a training step and the pipeline bubble.
//
// FLOPs count the matrix multiplications (2 per multiply-add), as Narayanan et al. 2021 do
// (§5.1, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM");
// the elementwise work of LayerNorm, GELU and softmax is left out. The bubble is the idle
// time of a pipeline flush as a fraction of the ideal (bubble-free) time.
#pragma once

#include "../nn/flops.hpp"
#include "config.hpp"
#include "formulas.hpp"
#include "model_spec.hpp"

namespace trident::plan {

// One layer's forward for `sequences` sequences of s tokens (nn/flops.hpp: 24 B s h^2 + 4 B s^2 h).
inline double layer_forward_flops(const ModelSpec& m, double sequences) {
  return nn::gpt_layer_forward_flops(m.seq, m.hidden, sequences);
}

// The LM head's forward: 2 B s h V (nn/flops.hpp).
inline double head_forward_flops(const ModelSpec& m, double sequences) {
  return nn::lm_head_forward_flops(m.seq, m.hidden, m.vocab, sequences);
}

// FLOPs the layers spend recomputing during the backward: full recomputation reruns each
// layer's forward, selective only its attention core 4 B s^2 h (Korthikanti et al. 2022, §5).
inline double recompute_flops(const ModelSpec& m, double sequences, Recompute r) {
  const double s = m.seq, h = m.hidden;
  if (r == Recompute::full) return m.layers * layer_forward_flops(m, sequences);
  if (r == Recompute::selective) return m.layers * 4 * sequences * s * s * h;
  return 0;
}

// FLOPs of one training step over the global batch B, all GPUs together. The backward costs
// twice the forward, so 3 forwards, plus recomputation. Without recomputation this is
//   72 B s L h^2 (1 + s/(6h) + V/(12 L h))  = 6 x (12 L h^2) x tokens + attention + head,
// and with full recomputation Narayanan et al. 2021, eq. (3):
//   96 B s L h^2 (1 + s/(6h) + V/(16 L h)).
inline double training_flops(const ModelSpec& m, int global_batch, Recompute r) {
  const double B = global_batch;
  const double forward = m.layers * layer_forward_flops(m, B) + head_forward_flops(m, B);
  return 3 * forward + recompute_flops(m, B, r);
}

// The bubble of configuration c's schedule over the ideal time (its traits; pp/bubble.hpp):
// (p-1)/(v m) for 1F1B and the interleaved schedule.
inline double bubble_over_ideal(const Config& c) {
  return pp::traits(c.schedule).bubble_over_ideal(c.pp, c.microbatches, c.virtual_stages);
}
// The same as a share of the step, as the run report measures it.
inline double bubble_share(const Config& c) {
  return pp::traits(c.schedule).bubble_share(c.pp, c.microbatches, c.virtual_stages);
}

}  // namespace trident::plan
