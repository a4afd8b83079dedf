// trident/cp/attention.hpp: a decoder block's causal attention, with or without context
// parallelism — the one call the models make (models/gpt2/block.hpp, models/llama/block.hpp).
//
// CP = 1: nn/attention.hpp on the rank's whole sequences. CP > 1: cp/ring_attention.hpp over
// the ring, which also reads the forward's output in the backward (FlashAttention-2's
// rowsum(dO * O)). Shapes as in ring_attention.hpp, seq being this rank's tokens per sequence:
// probs (batch, H, seq, cp seq).
//
// Selective activation recomputation (Korthikanti et al. 2022 §5; `--recompute selective`): a
// block drops the probabilities after its forward and its backward gets them back from the kept
// qkv by attention_probabilities, the same forward kernel run again (bit for bit the forward's).
#pragma once

#include <string>

#include "../backend/device_buffer.hpp"
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

// The probabilities attention's backward reads: `kept` where the forward kept them, else (kept
// empty: selective recomputation dropped them) recomputed from qkv into `scratch`, a buffer
// (MemoryKind::buffers) the caller holds until the backward is done, by the forward's kernel.
// The forward's output is recomputed alongside into a temporary and discarded. Only without
// context parallelism: the ring would have to run again (the trainer refuses the combination).
template <class B, class T>
const T* attention_probabilities(const ContextParallel<B>& cp, backend::DeviceBuffer<T, B>& scratch,
                                 const backend::DeviceBuffer<T, B>& kept, const T* qkv, int batch,
                                 int seq, int H, int KV, int D) {
  if (kept.allocated()) return kept.data();
  require(cp.size() == 1,
          "selective recomputation does not rerun ring attention (context parallelism): "
          "--recompute selective needs --cp 1");
  scratch.allocate(MemoryKind::buffers, std::size_t(batch) * H * seq * seq, Fill::none);
  backend::DeviceBuffer<T, B> out(MemoryKind::buffers, std::size_t(seq) * batch * H * D,
                                  Fill::none);  // written whole by the kernel, then discarded
  nn::attention_forward<B>(out.data(), scratch.data(), qkv, batch, seq, H, KV, D);
  return scratch.data();
}

}  // namespace trident
