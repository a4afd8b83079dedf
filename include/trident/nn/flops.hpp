// trident/nn/flops.hpp: the GEMM FLOPs of a GPT decoder's forward (Narayanan et al. 2021,
// §5.1, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM").
//
// FLOPs count the matrix multiplications (2 per multiply-add); the elementwise work of
// LayerNorm, GELU and softmax is left out. The paper planner (plan/compute.hpp) and GPT-2's
// stage costs (models/gpt2/model.hpp) both count with these.
#pragma once

namespace trident::nn {

// One layer's forward for `sequences` sequences of s tokens, hidden size h: GEMMs 24 B s h^2
// (QKV 6, attention projection 2, MLP 16) and attention 4 B s^2 h (Q K^T and scores x V).
inline double gpt_layer_forward_flops(double s, double h, double sequences) {
  return 24 * sequences * s * h * h + 4 * sequences * s * s * h;
}

// Its attention half (nn/block_halves.hpp): QKV, attention and projection, 8 B s h^2 + 4 B s^2 h;
// the MLP half is the rest, 16 B s h^2.
inline double gpt_attention_half_forward_flops(double s, double h, double sequences) {
  return 8 * sequences * s * h * h + 4 * sequences * s * s * h;
}

// The LM head's forward over a vocabulary of V: 2 B s h V.
inline double lm_head_forward_flops(double s, double h, double V, double sequences) {
  return 2 * sequences * s * h * V;
}

}  // namespace trident::nn
