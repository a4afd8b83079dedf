// trident/backend/kernels/attention.hpp: causal (grouped-query) self-attention on a backend:
// the GEMMs through B::gemm, the masked softmax as fused row kernels.
//
// The layout and math of nn/attention.hpp (Vaswani et al., "Attention Is All You Need", 2017;
// Ainslie et al., "GQA", 2023): rows [s, b], a packed row [q (H*D) | k (KV*D) | v (KV*D)],
// query head h reading K, V head h / (H / KV); P = softmax(Q K^T / sqrt(D)) with GPT-2's causal
// mask; out = P V. Unlike the CPU layer, the score GEMMs are full (S, S) (the mask is applied in
// the softmax rows): simpler, and the same values, since masked entries become exact zeros.
#pragma once

#include <cmath>

#include "../../core/memory.hpp"
#include "../device_buffer.hpp"
#include "../host_device.hpp"

namespace trident::backend::kernels {

// Row r of `rows` score rows of S columns (row s = r % S of its head): the causal softmax of
// scale * scores over columns [0, s], zeros after, in place.
template <class T>
struct CausalSoftmaxForward {
  T* p;
  int S;
  T scale;
  TRIDENT_HOST_DEVICE void operator()(int r) const {
    T* row = p + long(r) * S;
    const int s = r % S;
    T m = row[0];
    for (int j = 1; j <= s; ++j) m = math::max(m, row[j]);
    m *= scale;
    T sum = 0;
    for (int j = 0; j <= s; ++j) {
      row[j] = math::exp(row[j] * scale - m);
      sum += row[j];
    }
    const T inv = T(1) / sum;
    for (int j = 0; j <= s; ++j) row[j] *= inv;
    for (int j = s + 1; j < S; ++j) row[j] = T(0);
  }
};

// dS = P * (dP - rowsum(P * dP)) * scale in place of dP; row s of one head per call.
template <class T>
struct CausalSoftmaxBackward {
  T* dp;
  const T* p;
  int S;
  T scale;
  TRIDENT_HOST_DEVICE void operator()(int s) const {
    T* drow = dp + long(s) * S;
    const T* prow = p + long(s) * S;
    T dot = 0;
    for (int j = 0; j <= s; ++j) dot += prow[j] * drow[j];
    for (int j = 0; j <= s; ++j) drow[j] = prow[j] * (drow[j] - dot) * scale;
    for (int j = s + 1; j < S; ++j) drow[j] = T(0);
  }
};

// Bk: the backend type (B is the batch here).
// qkv: (S*B, (H + 2*KV)*D) -> probs: (B, H, S, S), out: (S*B, H*D); all in B's memory.
template <class Bk, class T>
void attention_forward(T* out, T* probs, const T* qkv, int B, int S, int H, int KV, int D) {
  const int width = (H + 2 * KV) * D, group = H / KV;
  const int stride = B * width, out_stride = B * H * D;  // between tokens of one sequence
  const T scale = T(1) / std::sqrt(T(D));
  for (int bh = 0; bh < B * H; ++bh) {  // scores = Q K^T: (S, S) per (b, h)
    const int b = bh / H, h = bh % H, g = h / group;
    const T* row = qkv + long(b) * width;
    Bk::gemm(false, true, S, S, D, row + long(h) * D, stride, row + long(H + g) * D, stride, T(0),
             probs + long(bh) * S * S, S);
  }
  Bk::for_each(B * H * S, CausalSoftmaxForward<T>{probs, S, scale});
  for (int bh = 0; bh < B * H; ++bh) {  // out = P V: (S, D) per (b, h)
    const int b = bh / H, h = bh % H, g = h / group;
    Bk::gemm(false, false, S, D, S, probs + long(bh) * S * S, S,
             qkv + long(b) * width + long(H + KV + g) * D, stride, T(0),
             out + long(b) * H * D + long(h) * D, out_stride);
  }
}

// dout: (S*B, H*D), qkv, probs from the forward -> dqkv: (S*B, (H + 2*KV)*D) overwritten.
// Per (b, h), with dP one (S, S) scratch: dP = dO V^T, dS = softmax backward, dQ = dS K,
// dV (+)= P^T dO, dK (+)= dS^T Q; the heads of a group sum into their K, V in order.
template <class Bk, class T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* probs, int B, int S, int H,
                        int KV, int D) {
  const int width = (H + 2 * KV) * D, group = H / KV;
  const int stride = B * width, out_stride = B * H * D;
  const T scale = T(1) / std::sqrt(T(D));
  DeviceBuffer<T, Bk> scratch(MemoryKind::buffers, std::size_t(S) * S, Fill::none);
  T* dp = scratch.data();
  for (int bh = 0; bh < B * H; ++bh) {
    const int b = bh / H, h = bh % H, g = h / group;
    const long row = long(b) * width;
    const T* q = qkv + row + long(h) * D;
    const T* k = qkv + row + long(H + g) * D;
    const T* v = qkv + row + long(H + KV + g) * D;
    T* dq = dqkv + row + long(h) * D;
    T* dk = dqkv + row + long(H + g) * D;
    T* dv = dqkv + row + long(H + KV + g) * D;
    const T* d_o = dout + long(b) * H * D + long(h) * D;
    const T* p = probs + long(bh) * S * S;
    const T kv_beta = h % group == 0 ? T(0) : T(1);  // the group's first head writes dK, dV
    Bk::gemm(false, true, S, S, D, d_o, out_stride, v, stride, T(0), dp, S);
    Bk::for_each(S, CausalSoftmaxBackward<T>{dp, p, S, scale});
    Bk::gemm(false, false, S, D, S, dp, S, k, stride, T(0), dq, stride);
    Bk::gemm(true, false, S, D, S, p, S, d_o, out_stride, kv_beta, dv, stride);
    Bk::gemm(true, false, S, D, S, dp, S, q, stride, kv_beta, dk, stride);
  }
}

}  // namespace trident::backend::kernels
