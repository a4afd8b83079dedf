// trident/nn/attention.hpp: causal multi-head self-attention, the core of a GPT-2 block.
//
// Scaled dot-product attention (Vaswani et al., "Attention Is All You Need", 2017) per sequence
// b and head h: P = softmax(Q K^T / sqrt(D)) with the causal mask of GPT-2 (token s sees tokens
// 0..s), out = P V. Rows are tokens in [s, b] order, so the S rows of sequence b are B rows
// apart: each head's Q, K, V, and its columns of out, are strided views into the fused
// matrices, and every product goes through backend::gemm without copying them.
// The work is parallel over (b, h) pairs; the GEMMs inside run on one thread each, the softmax
// rows as Eigen arrays (vectorized.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include <trident/backend/cpu/gemm.hpp>
#include <trident/nn/vectorized.hpp>

namespace trident::nn {

namespace attention_detail {
// Where the (S, D) block of head h of sequence b starts inside a matrix of rows [s, b] whose
// rows have `width` columns, `section` being 0 for q (or out), 1 for k, 2 for v.
inline std::ptrdiff_t head_offset(int b, int h, int section, int H, int D, int width) {
  return static_cast<std::ptrdiff_t>(b) * width + static_cast<std::ptrdiff_t>(section) * H * D +
         static_cast<std::ptrdiff_t>(h) * D;
}
// Elements of row s of an (S, S) score block that the softmax computes: the unmasked s + 1,
// rounded up to a multiple of 16 (SIMD width) within the row.
inline int masked_prefix(int s, int S) {
  return std::min(S, (s + 16) / 16 * 16);
}
}  // namespace attention_detail

// qkv: (S*B, 3*H*D), rows [s, b], columns [q | k | v], head h at columns h*D .. h*D+D-1 of each
// -> probs: (B, H, S, S) causal softmax of the scores Q K^T / sqrt(D), zero above the diagonal
//    out: (S*B, H*D), head h at columns h*D ..
template <class T>
void attention_forward(T* out, T* probs, const T* qkv, int B, int S, int H, int D) {
  using attention_detail::head_offset;
  using attention_detail::masked_prefix;
  const int width = 3 * H * D;                              // columns of qkv
  const std::ptrdiff_t stride = std::ptrdiff_t(B) * width;  // between tokens of one sequence
  const std::ptrdiff_t out_stride = std::ptrdiff_t(B) * H * D;
  const T scale = T(1) / std::sqrt(T(D));
#pragma omp parallel for
  for (int bh = 0; bh < B * H; ++bh) {
    const int b = bh / H, h = bh % H;
    const T* q = qkv + head_offset(b, h, 0, H, D, width);  // (S, D) each
    const T* k = qkv + head_offset(b, h, 1, H, D, width);
    const T* v = qkv + head_offset(b, h, 2, H, D, width);
    T* p = probs + static_cast<std::ptrdiff_t>(bh) * S * S;  // (S, S)
    // p = Q K^T (raw scores), then the masked, scaled softmax of each row, in place.
    backend::gemm(backend::view(p, S, S), backend::cview(q, S, D, stride),
                  backend::cview(k, S, D, stride), false, true, 0);
    // Each row's unmasked prefix, rounded up to a multiple of 16 elements (one AVX-512 register
    // of float), is exponentiated; the masked entries (which may overflow) are then set to 0.
    for (int s = 0; s < S; ++s) {
      T* r = p + static_cast<std::ptrdiff_t>(s) * S;
      const T m = CArrayMap<T>(r, s + 1).maxCoeff() * scale;
      ArrayMap<T> row(r, masked_prefix(s, S));
      row = (row * scale - m).exp();
      std::fill(r + s + 1, r + S, T(0));
      row *= T(1) / row.sum();
    }
    // out = P V: (S, D)
    backend::gemm(backend::view(out + head_offset(b, h, 0, H, D, H * D), S, D, out_stride),
                  backend::cview(p, S, S), backend::cview(v, S, D, stride), false, false, 0);
  }
}

// dout: (S*B, H*D), qkv: (S*B, 3*H*D), probs: (B, H, S, S) from the forward
// -> dqkv: (S*B, 3*H*D) overwritten. Per (b, h), with dP an (S, S) scratch of each thread:
//    dV = P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(P * dP)) / sqrt(D) (softmax backward),
//    dQ = dS K,  dK = dS^T Q.
template <class T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* probs, int B, int S, int H,
                        int D) {
  using attention_detail::head_offset;
  using attention_detail::masked_prefix;
  const int width = 3 * H * D;
  const std::ptrdiff_t stride = std::ptrdiff_t(B) * width;
  const std::ptrdiff_t out_stride = std::ptrdiff_t(B) * H * D;
  const T scale = T(1) / std::sqrt(T(D));
#pragma omp parallel
  {
    std::vector<T> scratch(static_cast<std::size_t>(S) * S);
    T* dp = scratch.data();  // (S, S): dP, then dS in place
#pragma omp for
    for (int bh = 0; bh < B * H; ++bh) {
      const int b = bh / H, h = bh % H;
      const auto q = backend::cview(qkv + head_offset(b, h, 0, H, D, width), S, D, stride);
      const auto k = backend::cview(qkv + head_offset(b, h, 1, H, D, width), S, D, stride);
      const auto v = backend::cview(qkv + head_offset(b, h, 2, H, D, width), S, D, stride);
      const auto d_o = backend::cview(dout + head_offset(b, h, 0, H, D, H * D), S, D, out_stride);
      const T* p = probs + static_cast<std::ptrdiff_t>(bh) * S * S;
      auto dq = backend::view(dqkv + head_offset(b, h, 0, H, D, width), S, D, stride);
      auto dk = backend::view(dqkv + head_offset(b, h, 1, H, D, width), S, D, stride);
      auto dv = backend::view(dqkv + head_offset(b, h, 2, H, D, width), S, D, stride);

      backend::gemm(dv, backend::cview(p, S, S), d_o, true, false, 0);
      backend::gemm(backend::view(dp, S, S), d_o, v, false, true, 0);
      // Row prefixes as in the forward: P is 0 above the diagonal, so masked scores get no
      // gradient.
      for (int s = 0; s < S; ++s) {
        const int n = masked_prefix(s, S);
        const CArrayMap<T> prow(p + static_cast<std::ptrdiff_t>(s) * S, n);
        ArrayMap<T> row(dp + static_cast<std::ptrdiff_t>(s) * S, n);
        row = prow * (row - (prow * row).sum()) * scale;
        std::fill(row.data() + n, row.data() + S, T(0));
      }
      backend::gemm(dq, backend::cview(dp, S, S), k, false, false, 0);
      backend::gemm(dk, backend::cview(dp, S, S), q, true, false, 0);
    }
  }
}

}  // namespace trident::nn
