// trident/nn/attention.hpp: causal multi-head self-attention, with grouped-query attention.
//
// Scaled dot-product attention (Vaswani et al., "Attention Is All You Need", 2017) per sequence
// b and head h: P = softmax(Q K^T / sqrt(D)) with the causal mask of GPT-2 (token s sees tokens
// 0..s), out = P V. Grouped-query attention (Ainslie et al., "GQA", 2023): H query heads and
// KV <= H key/value heads, query head h reading K, V head h / (H / KV); KV = H is multi-head
// attention (GPT-2), KV = 1 multi-query attention. Rows are tokens in [s, b] order, so the S rows
// of sequence b are B rows apart: each head's Q, K, V, and its columns of out, are strided views
// into the fused matrices, and every product goes through backend::gemm without copying them. The
// causal mask is applied by blocks of kRows rows: no product computes a block above the diagonal,
// and the softmax (forward and backward) runs fused over each row's unmasked prefix. The forward is
// parallel over (b, h) pairs, the backward over (b, g) pairs; the GEMMs inside run on one thread
// each, the softmax rows as Eigen arrays (vectorized.hpp).
#pragma once

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <vector>

#include <trident/backend/cpu/gemm.hpp>
#include <trident/nn/vectorized.hpp>

namespace trident::nn {

namespace attention_detail {
// The columns of a packed row [q (H*D) | k (KV*D) | v (KV*D)]: where query head h and key/value
// head g start.
struct PackedHeads {
  int H, KV, D;
  int width() const { return (H + 2 * KV) * D; }
  std::ptrdiff_t q(int h) const { return static_cast<std::ptrdiff_t>(h) * D; }
  std::ptrdiff_t k(int g) const { return static_cast<std::ptrdiff_t>(H + g) * D; }
  std::ptrdiff_t v(int g) const { return static_cast<std::ptrdiff_t>(H + KV + g) * D; }
};
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

// qkv: (S*B, (H + 2*KV)*D), rows [s, b], columns [q | k | v]: query head h at columns h*D ..,
//      key head g at (H + g)*D .., value head g at (H + KV + g)*D ..; KV divides H.
//      Under TP a rank passes its H/TP query and KV/TP key/value heads: a group's query heads are
//      consecutive, so they stay on the rank of their K, V head.
// -> probs: (B, H, S, S) causal softmax of the scores Q K^T / sqrt(D), zero above the diagonal
//    out: (S*B, H*D), head h at columns h*D ..
template <class T>
void attention_forward(T* out, T* probs, const T* qkv, int B, int S, int H, int KV, int D) {
  using attention_detail::block_end;
  using attention_detail::kRows;
  using attention_detail::masked_prefix;
  assert(KV > 0 && H % KV == 0 && "attention: KV heads must divide the query heads");
  const attention_detail::PackedHeads heads{H, KV, D};
  const int width = heads.width(), group = H / KV;          // columns of qkv; heads per K, V
  const std::ptrdiff_t stride = std::ptrdiff_t(B) * width;  // between tokens of one sequence
  const std::ptrdiff_t out_stride = std::ptrdiff_t(B) * H * D;
  const T scale = T(1) / std::sqrt(T(D));
#pragma omp parallel for
  for (int bh = 0; bh < B * H; ++bh) {
    const int b = bh / H, h = bh % H, g = h / group;
    const T* row = qkv + static_cast<std::ptrdiff_t>(b) * width;  // token 0 of sequence b
    const T* q = row + heads.q(h);                                // (S, D) each, rows stride apart
    const T* k = row + heads.k(g);
    const T* v = row + heads.v(g);
    T* p = probs + static_cast<std::ptrdiff_t>(bh) * S * S;            // (S, S)
    T* o = out + static_cast<std::ptrdiff_t>(b) * H * D + heads.q(h);  // (S, D)
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
        ArrayMap<T> scores(row_data, masked_prefix(s, S));
        scores = (scores * scale - m).exp();
        std::fill(row_data + s + 1, row_data + S, T(0));
        scores *= T(1) / scores.sum();
      }
      // out = P V: (rows, D)
      backend::gemm(backend::view(o + r * out_stride, rows, D, out_stride),
                    backend::cview(pr, rows, seen, S), backend::cview(v, seen, D, stride), false,
                    false, 0);
    }
  }
}

// dout: (S*B, H*D), qkv: (S*B, (H + 2*KV)*D), probs: (B, H, S, S) from the forward
// -> dqkv: (S*B, (H + 2*KV)*D) overwritten. Per (b, h), with dP an (S, S) scratch of each thread:
//    dP = dO V^T,  dS = P * (dP - rowsum(P * dP)) / sqrt(D) (softmax backward),
//    dQ = dS K,  dV = P^T dO,  dK = dS^T Q, each on the blocks below the diagonal.
// The H / KV query heads of a group share K, V: their dK, dV sum, so the work is parallel over
// (b, g) pairs, each summing its heads in order (KV = H: one head per pair, as multi-head).
template <class T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* probs, int B, int S, int H,
                        int KV, int D) {
  using attention_detail::block_end;
  using attention_detail::kRows;
  using attention_detail::masked_prefix;
  assert(KV > 0 && H % KV == 0 && "attention: KV heads must divide the query heads");
  const attention_detail::PackedHeads heads{H, KV, D};
  const int width = heads.width(), group = H / KV;
  const std::ptrdiff_t stride = std::ptrdiff_t(B) * width;
  const std::ptrdiff_t out_stride = std::ptrdiff_t(B) * H * D;
  const T scale = T(1) / std::sqrt(T(D));
#pragma omp parallel
  {
    std::vector<T> scratch(static_cast<std::size_t>(S) * S);
    T* dp = scratch.data();  // (S, S): dP, then dS in place
#pragma omp for
    for (int bg = 0; bg < B * KV; ++bg) {
      const int b = bg / KV, g = bg % KV;
      const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(b) * width;  // token 0 of sequence b
      const T* k = qkv + row + heads.k(g);  // (S, D) each, rows stride apart
      const T* v = qkv + row + heads.v(g);
      T* dk = dqkv + row + heads.k(g);
      T* dv = dqkv + row + heads.v(g);
      for (int h = g * group; h < (g + 1) * group; ++h) {
        const T* q = qkv + row + heads.q(h);
        const T* d_o = dout + static_cast<std::ptrdiff_t>(b) * H * D + heads.q(h);  // out_stride
        T* dq = dqkv + row + heads.q(h);
        const T* p = probs + (static_cast<std::ptrdiff_t>(b) * H + h) * S * S;
        const T kv_beta = h == g * group ? 0 : 1;  // the group's first head writes dK, dV
        for (int r = 0; r < S; r += kRows) {
          const int rows = block_end(r, S) - r, seen = r + rows;
          const auto pr = static_cast<std::ptrdiff_t>(r) * S;
          // dP = dO V^T on this block's unmasked columns, then dS in place (row prefixes as in
          // the forward: P is 0 above the diagonal, so masked scores get no gradient).
          backend::gemm(backend::view(dp + pr, rows, seen, S),
                        backend::cview(d_o + r * out_stride, rows, D, out_stride),
                        backend::cview(v, seen, D, stride), false, true, 0);
          for (int s = r; s < r + rows; ++s) {
            const int n = masked_prefix(s, S);
            const CArrayMap<T> prow(p + static_cast<std::ptrdiff_t>(s) * S, n);
            ArrayMap<T> drow(dp + static_cast<std::ptrdiff_t>(s) * S, n);
            drow = prow * (drow - (prow * drow).sum()) * scale;
            std::fill(drow.data() + n, drow.data() + seen, T(0));
          }
          // dQ = dS K: (rows, D)
          backend::gemm(backend::view(dq + r * stride, rows, D, stride),
                        backend::cview(dp + pr, rows, seen, S), backend::cview(k, seen, D, stride),
                        false, false, 0);
        }
        // Columns [c, c + kRows) of P and dS are nonzero in rows [c, S) only:
        // dV (+)= P^T dO and dK (+)= dS^T Q, (cols, D) each.
        for (int c = 0; c < S; c += kRows) {
          const int cols = block_end(c, S) - c, below = S - c;  // rows [c, S)
          const auto pc = static_cast<std::ptrdiff_t>(c) * S + c;
          backend::gemm(backend::view(dv + c * stride, cols, D, stride),
                        backend::cview(p + pc, below, cols, S),
                        backend::cview(d_o + c * out_stride, below, D, out_stride), true, false,
                        kv_beta);
          backend::gemm(backend::view(dk + c * stride, cols, D, stride),
                        backend::cview(dp + pc, below, cols, S),
                        backend::cview(q + c * stride, below, D, stride), true, false, kv_beta);
        }
      }
    }
  }
}

// Multi-head attention (KV = H, GPT-2): qkv and dqkv (S*B, 3*H*D).
template <class T>
void attention_forward(T* out, T* probs, const T* qkv, int B, int S, int H, int D) {
  attention_forward(out, probs, qkv, B, S, H, H, D);
}
template <class T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* probs, int B, int S, int H,
                        int D) {
  attention_backward(dqkv, dout, qkv, probs, B, S, H, H, D);
}

}  // namespace trident::nn
