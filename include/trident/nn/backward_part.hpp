// trident/nn/backward_part.hpp: which half of a layer's backward to run.
//
// Zero Bubble Pipeline Parallelism (Qi et al. 2023) splits each backward into B, the gradient of
// the input (on the pipeline's critical path), and W, the gradient of the weights (deferrable).
// Every layer with weights takes a BackwardPart: `both` is the fused backward (the default, as
// before the split); `input` computes only the input gradient; `weight` only the weight
// gradients, from the same saved tensors (the layer's input and the gradient of its output),
// which the caller keeps from B until W runs.
#pragma once

namespace trident::nn {

enum class BackwardPart { both, input, weight };

inline bool computes_input(BackwardPart part) {
  return part != BackwardPart::weight;
}
inline bool computes_weights(BackwardPart part) {
  return part != BackwardPart::input;
}

}  // namespace trident::nn
