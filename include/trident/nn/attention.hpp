// trident/nn/attention.hpp: causal multi-head self-attention, the core of a GPT-2 block.
//
// Scaled dot-product attention (Vaswani et al., "Attention Is All You Need", 2017) per sequence
// b and head h: P = softmax(Q K^T / sqrt(D)) with the causal mask of GPT-2 (token s sees tokens
// 0..s), out = P V. Rows are tokens in [s, b] order, so the S rows of sequence b are B rows
// apart: each head's Q, K, V, and its columns of out, are strided views into the fused
// matrices, and every product goes through backend::gemm without copying them. The causal mask
// is applied by blocks of kRows rows: no product computes a block above the diagonal, and the
// softmax (forward and backward) runs fused over each row's unmasked prefix.
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
// The causal mask by blocks: rows [r, r + kRows) of a score block see columns [0, r + kRows)
// only, so every product skips the blocks above the diagonal (S = 128: 5/8 of the full FLOPs).
// A multiple of 16, so that a row's masked prefix stays inside its block.
inline constexpr int kRows = 32;
inline int block_end(int r, int S) {
  return std::min(S, r + kRows);
}
}  // namespace attention_detail

// qkv: (S*B, 3*H*D), rows [s, b], columns [q | k | v], head h at columns h*D .. h*D+D-1 of each
// -> probs: (B, H, S, S) causal softmax of the scores Q K^T / sqrt(D), zero above the diagonal
//    out: (S*B, H*D), head h at columns h*D ..
template <class T>
void attention_forward(T* out, T* probs, const T* qkv, int B, int S, int H, int D) {
  using attention_detail::block_end;
  using attention_detail::head_offset;
  using attention_detail::kRows;
  using attention_detail::masked_prefix;
  const int width = 3 * H * D;                              // columns of qkv
  const std::ptrdiff_t stride = std::ptrdiff_t(B) * width;  // between tokens of one sequence
  const std::ptrdiff_t out_stride = std::ptrdiff_t(B) * H * D;
  const T scale = T(1) / std::sqrt(T(D));
#pragma omp parallel for
  for (int bh = 0; bh < B * H; ++bh) {
    const int b = bh / H, h = bh % H;
    const T* q = qkv + head_offset(b, h, 0, H, D, width);  // (S, D) each, rows stride apart
    const T* k = qkv + head_offset(b, h, 1, H, D, width);
    const T* v = qkv + head_offset(b, h, 2, H, D, width);
    T* p = probs + static_cast<std::ptrdiff_t>(bh) * S * S;  // (S, S)
    T* o = out + head_offset(b, h, 0, H, D, H * D);          // (S, D)
    for (int r = 0; r < S; r += kRows) {
      const int rows = block_end(r, S) - r, seen = r + rows;  // this block sees [0, seen)
      T* pr = p + static_cast<std::ptrdiff_t>(r) * S;         // (rows, seen) of p
      // Raw scores Q K^T, then each row's masked, scaled softmax in place: the unmasked prefix,
      // rounded up to a multiple of 16 elements, is exponentiated; the rest is set to 0.
      backend::gemm(backend::view(pr, rows, seen, S),
                    backend::cview(q + r * stride, rows, D, stride),
                    backend::cview(k, seen, D, stride), false, true, 0);
      for (int s = r; s < r + rows; ++s) {
        T* row_data = p + static_cast<std::ptrdiff_t>(s) * S;
        const T m = CArrayMap<T>(row_data, s + 1).maxCoeff() * scale;
        ArrayMap<T> row(row_data, masked_prefix(s, S));
        row = (row * scale - m).exp();
        std::fill(row_data + s + 1, row_data + S, T(0));
        row *= T(1) / row.sum();
      }
      // out = P V: (rows, D)
      backend::gemm(backend::view(o + r * out_stride, rows, D, out_stride),
                    backend::cview(pr, rows, seen, S), backend::cview(v, seen, D, stride), false,
                    false, 0);
    }
  }
}

// dout: (S*B, H*D), qkv: (S*B, 3*H*D), probs: (B, H, S, S) from the forward
// -> dqkv: (S*B, 3*H*D) overwritten. Per (b, h), with dP an (S, S) scratch of each thread:
//    dP = dO V^T,  dS = P * (dP - rowsum(P * dP)) / sqrt(D) (softmax backward),
//    dQ = dS K,  dV = P^T dO,  dK = dS^T Q, each on the blocks below the diagonal.
template <class T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* probs, int B, int S, int H,
                        int D) {
  using attention_detail::block_end;
  using attention_detail::head_offset;
  using attention_detail::kRows;
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
      const T* q = qkv + head_offset(b, h, 0, H, D, width);  // (S, D) each, rows stride apart
      const T* k = qkv + head_offset(b, h, 1, H, D, width);
      const T* v = qkv + head_offset(b, h, 2, H, D, width);
      const T* d_o = dout + head_offset(b, h, 0, H, D, H * D);  // rows out_stride apart
      T* dq = dqkv + head_offset(b, h, 0, H, D, width);
      T* dk = dqkv + head_offset(b, h, 1, H, D, width);
      T* dv = dqkv + head_offset(b, h, 2, H, D, width);
      const T* p = probs + static_cast<std::ptrdiff_t>(bh) * S * S;
      for (int r = 0; r < S; r += kRows) {
        const int rows = block_end(r, S) - r, seen = r + rows;
        const auto pr = static_cast<std::ptrdiff_t>(r) * S;
        // dP = dO V^T on this block's unmasked columns, then dS in place (row prefixes as in the
        // forward: P is 0 above the diagonal, so masked scores get no gradient).
        backend::gemm(backend::view(dp + pr, rows, seen, S),
                      backend::cview(d_o + r * out_stride, rows, D, out_stride),
                      backend::cview(v, seen, D, stride), false, true, 0);
        for (int s = r; s < r + rows; ++s) {
          const int n = masked_prefix(s, S);
          const CArrayMap<T> prow(p + static_cast<std::ptrdiff_t>(s) * S, n);
          ArrayMap<T> row(dp + static_cast<std::ptrdiff_t>(s) * S, n);
          row = prow * (row - (prow * row).sum()) * scale;
          std::fill(row.data() + n, row.data() + seen, T(0));
        }
        // dQ = dS K: (rows, D)
        backend::gemm(backend::view(dq + r * stride, rows, D, stride),
                      backend::cview(dp + pr, rows, seen, S), backend::cview(k, seen, D, stride),
                      false, false, 0);
      }
      // Columns [c, c + kRows) of P and dS are nonzero in rows [c, S) only:
      // dV = P^T dO and dK = dS^T Q, (cols, D) each.
      for (int c = 0; c < S; c += kRows) {
        const int cols = block_end(c, S) - c, below = S - c;  // rows [c, S)
        const auto pc = static_cast<std::ptrdiff_t>(c) * S + c;
        backend::gemm(backend::view(dv + c * stride, cols, D, stride),
                      backend::cview(p + pc, below, cols, S),
                      backend::cview(d_o + c * out_stride, below, D, out_stride), true, false, 0);
        backend::gemm(backend::view(dk + c * stride, cols, D, stride),
                      backend::cview(dp + pc, below, cols, S),
                      backend::cview(q + c * stride, below, D, stride), true, false, 0);
      }
    }
  }
}

}  // namespace trident::nn
