// trident/nn/detail/attention_gemm.hpp: causal attention as GEMMs per (sequence, head) around
// causal-softmax row bodies, on any backend: what a device whose kernels are not host code runs
// (nn/attention.hpp). Internal: nn/attention.hpp is the interface.
//
// Per (b, h): scores = Q K^T through Bk::gemm (strided views into the packed qkv rows, as the
// fused kernel's), P = the causal softmax of scale * scores row by row (masked entries exact
// zeros, so the full (seq, seq) products give the same values), out = P V. The backward per
// (b, h) with one (seq, seq) scratch: dP = dO V^T, dS = P (dP - rowsum(P dP)) scale,
// dQ = dS K, dV (+)= P^T dO, dK (+)= dS^T Q (a group's query heads sum into their K, V in order).
#pragma once

#include <cmath>
#include <cstddef>

#include "../../backend/device_buffer.hpp"
#include "../../backend/host_device.hpp"

namespace trident::nn::attention_detail {

// Row r of `rows` score rows of seq columns (row s = r % seq of its head): the causal softmax of
// scale * scores over columns [0, s], zeros after, in place.
template <class T>
struct CausalSoftmaxRows {
  T* p;
  int seq;
  T scale;
  TRIDENT_HOST_DEVICE void operator()(int r) const {
    T* row = p + std::ptrdiff_t(r) * seq;
    const int s = r % seq;
    T m = row[0];
    for (int j = 1; j <= s; ++j) m = backend::math::max(m, row[j]);
    T sum = 0;
    TRIDENT_SIMD_SUM(sum)
    for (int j = 0; j <= s; ++j) {
      const T e = backend::math::exp((row[j] - m) * scale);
      row[j] = e;
      sum += e;
    }
    const T inv = T(1) / sum;
    TRIDENT_SIMD
    for (int j = 0; j <= s; ++j) row[j] *= inv;
    for (int j = s + 1; j < seq; ++j) row[j] = T(0);
  }
};

// dS = P * (dP - rowsum(P * dP)) * scale in place of dP; row s of one head per call.
template <class T>
struct CausalSoftmaxBackwardRows {
  T* dp;
  const T* p;
  int seq;
  T scale;
  TRIDENT_HOST_DEVICE void operator()(int s) const {
    T* drow = dp + std::ptrdiff_t(s) * seq;
    const T* prow = p + std::ptrdiff_t(s) * seq;
    T dot = 0;
    TRIDENT_SIMD_SUM(dot)
    for (int j = 0; j <= s; ++j) dot += prow[j] * drow[j];
    TRIDENT_SIMD
    for (int j = 0; j <= s; ++j) drow[j] = prow[j] * (drow[j] - dot) * scale;
    for (int j = s + 1; j < seq; ++j) drow[j] = T(0);
  }
};

// qkv: (seq*batch, (H + 2*KV)*D) -> probs: (batch, H, seq, seq), out: (seq*batch, H*D)
template <class Bk, class T>
void gemm_forward(T* out, T* probs, const T* qkv, int batch, int seq, int H, int KV, int D) {
  const int width = (H + 2 * KV) * D, group = H / KV;
  const int stride = batch * width, out_stride = batch * H * D;  // between tokens of a sequence
  const T scale = T(1) / std::sqrt(T(D));
  for (int bh = 0; bh < batch * H; ++bh) {  // scores = Q K^T: (seq, seq) per (b, h)
    const int b = bh / H, h = bh % H, g = h / group;
    const T* row = qkv + std::ptrdiff_t(b) * width;
    Bk::gemm(false, true, seq, seq, D, row + std::ptrdiff_t(h) * D, stride,
             row + std::ptrdiff_t(H + g) * D, stride, T(0), probs + std::ptrdiff_t(bh) * seq * seq,
             seq);
  }
  Bk::for_each(batch * H * seq, CausalSoftmaxRows<T>{probs, seq, scale});
  for (int bh = 0; bh < batch * H; ++bh) {  // out = P V: (seq, D) per (b, h)
    const int b = bh / H, h = bh % H, g = h / group;
    Bk::gemm(false, false, seq, D, seq, probs + std::ptrdiff_t(bh) * seq * seq, seq,
             qkv + std::ptrdiff_t(b) * width + std::ptrdiff_t(H + KV + g) * D, stride, T(0),
             out + std::ptrdiff_t(b) * H * D + std::ptrdiff_t(h) * D, out_stride);
  }
}

// dout: (seq*batch, H*D), qkv, probs from the forward -> dqkv overwritten.
template <class Bk, class T>
void gemm_backward(T* dqkv, const T* dout, const T* qkv, const T* probs, int batch, int seq, int H,
                   int KV, int D) {
  const int width = (H + 2 * KV) * D, group = H / KV;
  const int stride = batch * width, out_stride = batch * H * D;
  const T scale = T(1) / std::sqrt(T(D));
  backend::DeviceBuffer<T, Bk> scratch(MemoryKind::buffers, std::size_t(seq) * seq, Fill::none);
  T* dp = scratch.data();
  for (int bh = 0; bh < batch * H; ++bh) {
    const int b = bh / H, h = bh % H, g = h / group;
    const std::ptrdiff_t row = std::ptrdiff_t(b) * width;
    const T* q = qkv + row + std::ptrdiff_t(h) * D;
    const T* k = qkv + row + std::ptrdiff_t(H + g) * D;
    const T* v = qkv + row + std::ptrdiff_t(H + KV + g) * D;
    T* dq = dqkv + row + std::ptrdiff_t(h) * D;
    T* dk = dqkv + row + std::ptrdiff_t(H + g) * D;
    T* dv = dqkv + row + std::ptrdiff_t(H + KV + g) * D;
    const T* d_o = dout + std::ptrdiff_t(b) * H * D + std::ptrdiff_t(h) * D;
    const T* p = probs + std::ptrdiff_t(bh) * seq * seq;
    const T kv_beta = h % group == 0 ? T(0) : T(1);  // the group's first head writes dK, dV
    Bk::gemm(false, true, seq, seq, D, d_o, out_stride, v, stride, T(0), dp, seq);
    Bk::for_each(seq, CausalSoftmaxBackwardRows<T>{dp, p, seq, scale});
    Bk::gemm(false, false, seq, D, seq, dp, seq, k, stride, T(0), dq, stride);
    Bk::gemm(true, false, seq, D, seq, p, seq, d_o, out_stride, kv_beta, dv, stride);
    Bk::gemm(true, false, seq, D, seq, dp, seq, q, stride, kv_beta, dk, stride);
  }
}

}  // namespace trident::nn::attention_detail
