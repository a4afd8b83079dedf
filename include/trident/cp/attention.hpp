// trident/cp/attention.hpp: a decoder block's causal attention, with or without context
// parallelism — the one call the models make (models/gpt2/block.hpp, models/llama/block.hpp).
//
// CP = 1: nn/attention.hpp on the rank's whole sequences. CP > 1: cp/ring_attention.hpp over
// the ring, which also reads the forward's output in the backward (FlashAttention-2's
// rowsum(dO * O)). Shapes as in ring_attention.hpp, seq being this rank's tokens per sequence:
// probs (batch, H, seq, cp seq).
#pragma once

#include "../core/error.hpp"
#include "../nn/attention.hpp"
#include "ring_attention.hpp"

namespace trident {

template <class B, class T>
void attention_forward(const ContextParallel<B>& cp, T* out, T* probs, const T* qkv, int batch,
                       int seq, int H, int KV, int D) {
  if (cp.size() == 1) return nn::attention_forward<B>(out, probs, qkv, batch, seq, H, KV, D);
  if constexpr (B::kHostKernels)
    ring_attention_forward(cp, out, probs, qkv, batch, seq, H, KV, D);
  else
    fail(std::string("context parallelism: ring attention has no ") + B::kName + " kernel");
}

template <class B, class T>
void attention_backward(const ContextParallel<B>& cp, T* dqkv, const T* dout, const T* qkv,
                        const T* out, const T* probs, int batch, int seq, int H, int KV, int D) {
  if (cp.size() == 1)
    return nn::attention_backward<B>(dqkv, dout, qkv, probs, batch, seq, H, KV, D);
  if constexpr (B::kHostKernels)
    ring_attention_backward(cp, dqkv, dout, qkv, out, probs, batch, seq, H, KV, D);
  else
    fail(std::string("context parallelism: ring attention has no ") + B::kName + " kernel");
}

}  // namespace trident
