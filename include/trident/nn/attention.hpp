// trident/nn/attention.hpp: causal multi-head self-attention, with grouped-query attention, on a
// backend.
//
// Scaled dot-product attention (Vaswani et al., "Attention Is All You Need", 2017) per sequence
// b and head h: P = softmax(Q K^T / sqrt(D)) with the causal mask of GPT-2 (token s sees tokens
// 0..s), out = P V. Grouped-query attention (Ainslie et al., "GQA", 2023): H query heads and
// KV <= H key/value heads, query head h reading K, V head h / (H / KV); KV = H is multi-head
// attention (GPT-2), KV = 1 multi-query attention. Rows are tokens in [s, b] order, so the seq
// rows of sequence b are `batch` rows apart.
//
// Attention's core is a fused kernel per kind of device, as the GEMM is (the BLAS or cuBLAS):
// where the backend's kernels are host code (Cpu, Emulated: kHostKernels) the CPU's register-tile
// kernel (detail/attention_fused.hpp) runs as one launch; elsewhere (a GPU) GEMMs per
// (sequence, head) around causal-softmax row bodies (detail/attention_gemm.hpp). Both compute the
// same P and the same gradients; the tests check each against the other and against finite
// differences. The caller sees one layer: probs is what its own backward reads.
#pragma once

#include "../backend/cpu/cpu.hpp"
#include "detail/attention_fused.hpp"
#include "detail/attention_gemm.hpp"

namespace trident::nn {

// qkv: (seq*batch, (H + 2*KV)*D), rows [s, b], columns [q | k | v]: query head h at columns
//      h*D .., key head g at (H + g)*D .., value head g at (H + KV + g)*D ..; KV divides H.
//      Under TP a rank passes its H/TP query and KV/TP key/value heads: a group's query heads
//      are consecutive, so they stay on the rank of their K, V head.
// -> probs: (batch, H, seq, seq) the causal softmax of Q K^T / sqrt(D), for the backward;
//    out: (seq*batch, H*D), head h at columns h*D ..
template <class Bk = backend::Cpu, class T>
void attention_forward(T* out, T* probs, const T* qkv, int batch, int seq, int H, int KV, int D) {
  if constexpr (Bk::kHostKernels)
    Bk::host_kernel(
        [&] { attention_detail::fused_forward(out, probs, qkv, batch, seq, H, KV, D); });
  else
    attention_detail::gemm_forward<Bk>(out, probs, qkv, batch, seq, H, KV, D);
}

// dout: (seq*batch, H*D), qkv and probs from the forward -> dqkv: (seq*batch, (H + 2*KV)*D),
// overwritten: dP = dO V^T, dS = P * (dP - rowsum(P * dP)) / sqrt(D), dQ = dS K, dV = P^T dO,
// dK = dS^T Q, the H / KV query heads of a group summed into their K, V.
template <class Bk = backend::Cpu, class T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* probs, int batch, int seq,
                        int H, int KV, int D) {
  if constexpr (Bk::kHostKernels)
    Bk::host_kernel(
        [&] { attention_detail::fused_backward(dqkv, dout, qkv, probs, batch, seq, H, KV, D); });
  else
    attention_detail::gemm_backward<Bk>(dqkv, dout, qkv, probs, batch, seq, H, KV, D);
}

// Multi-head attention (KV = H, GPT-2): qkv and dqkv (seq*batch, 3*H*D).
template <class Bk = backend::Cpu, class T>
void attention_forward(T* out, T* probs, const T* qkv, int batch, int seq, int H, int D) {
  attention_forward<Bk>(out, probs, qkv, batch, seq, H, H, D);
}
template <class Bk = backend::Cpu, class T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* probs, int batch, int seq,
                        int H, int D) {
  attention_backward<Bk>(dqkv, dout, qkv, probs, batch, seq, H, H, D);
}

}  // namespace trident::nn
