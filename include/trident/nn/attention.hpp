// trident/nn/attention.hpp: causal multi-head self-attention, with grouped-query attention.
//
// Scaled dot-product attention (Vaswani et al., "Attention Is All You Need", 2017) per sequence
// b and head h: P = softmax(Q K^T / sqrt(D)) with the causal mask of GPT-2 (token s sees tokens
// 0..s), out = P V. Grouped-query attention (Ainslie et al., "GQA", 2023): H query heads and
// KV <= H key/value heads, query head h reading K, V head h / (H / KV); KV = H is multi-head
// attention (GPT-2), KV = 1 multi-query attention. Rows are tokens in [s, b] order, so the seq
// rows of sequence b are B rows apart: each head's Q, K, V, and its columns of out, are strided
// views into the fused matrices, read in place.
//
// One fused kernel per (sequence, head), in the manner of FlashAttention (Dao et al., 2022) but
// keeping P for the backward: tiles of kTile query rows, their scores in SIMD registers against
// K^T packed once per head (the packing any GEMM does), the causal mask by tiles (no tile
// computes the columns past its last row, rounded up to a SIMD chunk), the scaled, masked
// softmax over each row while it is in L1, then P V. The backward likewise: dP = dO V^T by
// tiles, dS = P * (dP - rowsum(P * dP)) / sqrt(D) fused per row, dQ = dS K, dV = P^T dO,
// dK = dS^T Q. Scratch (packed K^T or V^T, dS) is kept per thread between calls. The forward
// is parallel over (b, h) pairs, the backward over (b, g) pairs (a group's heads sum into one
// dK, dV).
#pragma once

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <vector>

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

// A SIMD chunk: kWidth elements as an Eigen fixed-size array, which Eigen keeps in vector
// registers (one AVX-512 register of float) and loads from unaligned rows without a scalar
// prologue.
inline constexpr int kWidth = 16;
template <class T>
using Lanes = Eigen::Array<T, kWidth, 1>;
template <class T>
using LanesMap = Eigen::Map<Lanes<T>>;
template <class T>
using CLanesMap = Eigen::Map<const Lanes<T>>;

// Whether a call has the work to share among threads (a parallel region costs more than a tiny
// product, much more on a busy machine): about a million multiply-adds.
inline bool worth_threads(int pairs, int seq, int D) {
  return static_cast<double>(pairs) * seq * seq * D >= 1e6;
}

// Query rows per register tile (kTile x kWidth accumulators).
inline constexpr int kTile = 8;
inline int round_up(int n, int m) {
  return (n + m - 1) / m * m;
}
// Columns of the score rows [i0, i0 + rows) that a tile computes: up to its last row's diagonal,
// rounded up to a chunk (the causal mask by tiles).
inline int tile_columns(int i0, int rows, int seq) {
  return std::min(seq, round_up(i0 + rows, kWidth));
}
// Columns of score row s that its tile computes: [0, s] the softmax, then zeros. The forward
// writes no further (the backward reads no further): a row's last chunks above the diagonal
// are not written, which halves the traffic of P to memory.
inline int row_columns(int s, int seq) {
  const bool in_full_tile = s < seq / kTile * kTile;
  return in_full_tile ? tile_columns(s / kTile * kTile, kTile, seq) : tile_columns(s, 1, seq);
}
// Calls tile(i0, rows) over [0, n) in tiles of kTile rows, then single rows; rows is an
// std::integral_constant, so the kernels' register tiles have a fixed size.
template <class Tile>
void for_tiles(int n, const Tile& tile) {
  int i = 0;
  for (; i + kTile <= n; i += kTile) tile(i, std::integral_constant<int, kTile>{});
  for (; i < n; ++i) tile(i, std::integral_constant<int, 1>{});
}

// Packing one head's (n, D) matrix, whose rows are ldx elements apart in a fused matrix, into
// contiguous scratch before the products, as a GEMM packs its panels: rows of the fused
// matrices lie a multiple of 4 KiB apart, so reading many of them in place thrashes the few
// L1 cache sets they map to.
// xt: (D, round_up(n, kWidth)) = x^T, zero-padded.
template <class T>
void pack_transposed(std::vector<T>& xt, const T* x, std::ptrdiff_t ldx, int n, int D) {
  const int ld = round_up(n, kWidth);
  xt.resize(static_cast<std::size_t>(D) * ld);
  for (int t = 0; t < n; ++t)
    for (int d = 0; d < D; ++d) xt[static_cast<std::size_t>(d) * ld + t] = x[t * ldx + d];
  for (int d = 0; d < D; ++d)
    std::fill(xt.data() + static_cast<std::size_t>(d) * ld + n,
              xt.data() + static_cast<std::size_t>(d + 1) * ld, T(0));
}
// Asks the cache for the rows of a head that the next (sequence, head) pair reads: rows lie in
// different 4 KiB pages, which the hardware prefetchers do not follow, so each would otherwise
// be a demand miss waited for. write: the rows will be written.
template <class T>
void prefetch_rows(const T* x, std::ptrdiff_t ldx, int n, int D, bool write = false) {
  constexpr int kLine = 64 / sizeof(T);
  for (int t = 0; t < n; ++t)
    for (int d = 0; d < D; d += kLine) {
      if (write)
        __builtin_prefetch(x + t * ldx + d, 1, 2);
      else
        __builtin_prefetch(x + t * ldx + d, 0, 2);
    }
}
// xc: (n, D) = x, contiguous.
template <class T>
void pack(std::vector<T>& xc, const T* x, std::ptrdiff_t ldx, int n, int D) {
  xc.resize(static_cast<std::size_t>(n) * D);
  for (int t = 0; t < n; ++t) std::copy(x + t * ldx, x + t * ldx + D, xc.data() + t * D);
}

// c: (R, n) rows ldc apart = a: (R, D) rows lda apart . bt: (D, >= n) rows ldb apart, zero
// beyond the last column (pack_transposed).
template <int R, class T>
void product_transposed(T* c, std::ptrdiff_t ldc, const T* a, std::ptrdiff_t lda, const T* bt,
                        std::ptrdiff_t ldb, int n, int D) {
  for (int t = 0; t < n; t += kWidth) {
    Lanes<T> acc[R];
    for (auto& x : acc) x.setZero();
    for (int d = 0; d < D; ++d) {
      const CLanesMap<T> b(bt + d * ldb + t);
      for (int i = 0; i < R; ++i) acc[i] += a[i * lda + d] * b;
    }
    const int width = std::min(kWidth, n - t);
    for (int i = 0; i < R; ++i) {
      if (width == kWidth)
        LanesMap<T>(c + i * ldc + t) = acc[i];
      else
        std::copy(acc[i].data(), acc[i].data() + width, c + i * ldc + t);
    }
  }
}

// out: (R, C*kWidth) rows ldo apart (+)= w: (R, [j0, j1)) . x: ([j0, j1), C*kWidth) rows ldx
// apart, where w(i, j) = w[i * wi + j * wj]; accumulate: += instead of =. R x C accumulators.
template <int R, int C, class T>
void weighted_lanes(T* out, std::ptrdiff_t ldo, const T* w, std::ptrdiff_t wi, std::ptrdiff_t wj,
                    const T* x, std::ptrdiff_t ldx, int j0, int j1, bool accumulate) {
  Lanes<T> acc[R][C];
  for (auto& row : acc)
    for (auto& a : row) a.setZero();
  for (int j = j0; j < j1; ++j) {
    Lanes<T> xj[C];
    for (int c = 0; c < C; ++c) xj[c] = CLanesMap<T>(x + j * ldx + c * kWidth);
    for (int i = 0; i < R; ++i) {
      const T wij = w[i * wi + j * wj];
      for (int c = 0; c < C; ++c) acc[i][c] += wij * xj[c];
    }
  }
  for (int i = 0; i < R; ++i)
    for (int c = 0; c < C; ++c) {
      LanesMap<T> o(out + i * ldo + c * kWidth);
      if (accumulate)
        o += acc[i][c];
      else
        o = acc[i][c];
    }
}

// out: (R, D) rows ldo apart (+)= w: (R, [j0, j1)) . x: ([j0, j1), D) rows ldx apart, where
// w(i, j) = w[i * wi + j * wj] (wi = 1 reads w transposed); accumulate: += instead of =.
// In register tiles of up to 4 rows by 2 chunks; D's last, partial chunk scalar.
template <int R, class T>
void weighted_rows(T* out, std::ptrdiff_t ldo, const T* w, std::ptrdiff_t wi, std::ptrdiff_t wj,
                   const T* x, std::ptrdiff_t ldx, int j0, int j1, int D, bool accumulate) {
  if constexpr (R > 4) {
    for (int i = 0; i < R; i += 4)
      weighted_rows<4>(out + i * ldo, ldo, w + i * wi, wi, wj, x, ldx, j0, j1, D, accumulate);
  } else {
    int d = 0;
    for (; d + 2 * kWidth <= D; d += 2 * kWidth)
      weighted_lanes<R, 2>(out + d, ldo, w, wi, wj, x + d, ldx, j0, j1, accumulate);
    for (; d + kWidth <= D; d += kWidth)
      weighted_lanes<R, 1>(out + d, ldo, w, wi, wj, x + d, ldx, j0, j1, accumulate);
    for (; d < D; ++d)
      for (int i = 0; i < R; ++i) {
        T sum = 0;
        for (int j = j0; j < j1; ++j) sum += w[i * wi + j * wj] * x[j * ldx + d];
        T& o = out[i * ldo + d];
        o = accumulate ? o + sum : sum;
      }
  }
}

// The masks of a chunk cut at lane k (0 < k < kWidth): keep(k) is 1 in lanes [0, k) and 0 in
// [k, kWidth); hide(k) is 0 in lanes [0, k) and -infinity in [k, kWidth). Windows into a table,
// so that the chunk the causal mask cuts stays in vector registers.
template <class T>
CLanesMap<T> keep(int k) {
  static const struct Table {
    T x[2 * kWidth];
    Table() {
      for (int i = 0; i < 2 * kWidth; ++i) x[i] = i < kWidth ? T(1) : T(0);
    }
  } table;
  return CLanesMap<T>(table.x + kWidth - k);
}
template <class T>
CLanesMap<T> hide(int k) {
  static const struct Table {
    T x[2 * kWidth];
    Table() {
      for (int i = 0; i < 2 * kWidth; ++i)
        x[i] = i < kWidth ? T(0) : -std::numeric_limits<T>::infinity();
    }
  } table;
  return CLanesMap<T>(table.x + kWidth - k);
}

// x: the scores of one row, [0, n) computed (valid <= n) -> x: [0, n) the softmax of
// x[0, valid) * scale, 0 in [valid, n) (the causal mask). One pass for the max, one for exp and
// its sum, one for the normalisation, all in chunks.
template <class T>
void softmax_row(T* x, int valid, int n, T scale) {
  const int full = valid / kWidth * kWidth, cut = valid - full;  // chunks [0, full) unmasked
  if (cut > 0 && full + kWidth > n) {  // a row end that is not a whole chunk (n: seq)
    const T m = ArrayMap<T>(x, valid).maxCoeff();
    ArrayMap<T> e(x, valid);
    e = ((e - m) * scale).exp();
    e /= e.sum();
    std::fill(x + valid, x + n, T(0));
    return;
  }
  Lanes<T> acc = Lanes<T>::Constant(-std::numeric_limits<T>::infinity());
  for (int i = 0; i < full; i += kWidth) acc = acc.max(LanesMap<T>(x + i));
  if (cut > 0) acc = acc.max(LanesMap<T>(x + full) + hide<T>(cut));
  const T m = acc.maxCoeff();
  acc.setZero();
  for (int i = 0; i < full; i += kWidth) {
    LanesMap<T> c(x + i);
    c = ((c - m) * scale).exp();
    acc += c;
  }
  const int end = cut > 0 ? full + kWidth : full;
  if (cut > 0) {
    LanesMap<T> c(x + full);
    c = ((c + hide<T>(cut) - m) * scale).exp() * keep<T>(cut);
    acc += c;
  }
  const T inv = T(1) / acc.sum();
  for (int i = 0; i < end; i += kWidth) LanesMap<T>(x + i) *= inv;
  std::fill(x + end, x + n, T(0));
}

// p, dp: one row of P and dP = dO V^T over [0, n) (P is 0 past the diagonal)
// -> dp: the softmax backward dS = P * (dP - rowsum(P * dP)) * scale over [0, n).
template <class T>
void softmax_backward_row(T* dp, const T* p, int n, T scale) {
  Lanes<T> acc = Lanes<T>::Zero();
  int i = 0;
  for (; i + kWidth <= n; i += kWidth) acc += CLanesMap<T>(p + i) * LanesMap<T>(dp + i);
  T delta = acc.sum();
  for (int j = i; j < n; ++j) delta += p[j] * dp[j];
  for (i = 0; i + kWidth <= n; i += kWidth) {
    LanesMap<T> d(dp + i);
    d = CLanesMap<T>(p + i) * (d - delta) * scale;
  }
  for (; i < n; ++i) dp[i] = p[i] * (dp[i] - delta) * scale;
}

// Per-thread scratch, kept between calls (grown, never shrunk): one head's packed matrices.
template <class T>
struct Scratch {
  std::vector<T> transposed;     // (D, seq rounded up): K^T (forward) or V^T (backward)
  std::vector<T> q, k, v, dout;  // (seq, D) each
  std::vector<T> ds;             // (seq, seq): dP, then dS
};
template <class T>
Scratch<T>& thread_scratch() {
  thread_local Scratch<T> scratch;
  return scratch;
}

}  // namespace attention_detail

// qkv: (seq*B, (H + 2*KV)*D), rows [s, b], columns [q | k | v]: query head h at columns h*D ..,
//      key head g at (H + g)*D .., value head g at (H + KV + g)*D ..; KV divides H.
//      Under TP a rank passes its H/TP query and KV/TP key/value heads: a group's query heads are
//      consecutive, so they stay on the rank of their K, V head.
// -> probs: (B, H, seq, seq) causal softmax of the scores Q K^T / sqrt(D): row s in columns
//    [0, s], zeros up to row_columns(s, seq), not written beyond (never read);
//    out: (seq*B, H*D), head h at columns h*D ..
template <class T>
void attention_forward(T* out, T* probs, const T* qkv, int B, int seq, int H, int KV, int D) {
  namespace ad = attention_detail;
  assert(KV > 0 && H % KV == 0 && "attention: KV heads must divide the query heads");
  const ad::PackedHeads heads{H, KV, D};
  const int width = heads.width(), group = H / KV, ld = ad::round_up(seq, ad::kWidth);
  const std::ptrdiff_t stride = std::ptrdiff_t(B) * width;  // between tokens of one sequence
  const std::ptrdiff_t out_stride = std::ptrdiff_t(B) * H * D;
  const T scale = T(1) / std::sqrt(T(D));
#pragma omp parallel for if (ad::worth_threads(B * H, seq, D))
  for (int bh = 0; bh < B * H; ++bh) {
    const int b = bh / H, h = bh % H, g = h / group;
    const T* row = qkv + static_cast<std::ptrdiff_t>(b) * width;  // token 0 of sequence b
    const T* q = row + heads.q(h);                                // (seq, D), rows stride apart
    T* p = probs + static_cast<std::ptrdiff_t>(bh) * seq * seq;   // (seq, seq)
    T* o = out + static_cast<std::ptrdiff_t>(b) * H * D + heads.q(h);  // (seq, D)
    if (bh + 1 < B * H) {  // the next pair's Q, K, V and out
      const int b1 = (bh + 1) / H, h1 = (bh + 1) % H, g1 = h1 / group;
      const T* row1 = qkv + static_cast<std::ptrdiff_t>(b1) * width;
      for (const std::ptrdiff_t column : {heads.q(h1), heads.k(g1), heads.v(g1)})
        ad::prefetch_rows(row1 + column, stride, seq, D);
      ad::prefetch_rows(out + static_cast<std::ptrdiff_t>(b1) * H * D + heads.q(h1), out_stride,
                        seq, D, true);
    }
    ad::Scratch<T>& scratch = ad::thread_scratch<T>();
    ad::pack_transposed(scratch.transposed, row + heads.k(g), stride, seq, D);  // K^T: (D, ld)
    ad::pack(scratch.v, row + heads.v(g), stride, seq, D);                      // V: (seq, D)
    ad::for_tiles(seq, [&](int i0, auto tile) {
      constexpr int R = decltype(tile)::value;
      const int n = ad::tile_columns(i0, R, seq);
      T* pi = p + static_cast<std::ptrdiff_t>(i0) * seq;  // (R, seq)
      ad::product_transposed<R>(pi, seq, q + i0 * stride, stride, scratch.transposed.data(), ld, n,
                                D);
      for (int i = 0; i < R; ++i) ad::softmax_row(pi + i * seq, i0 + i + 1, n, scale);
      // out = P V: (R, D), over the columns [0, i0 + R) where P is not 0
      ad::weighted_rows<R>(o + i0 * out_stride, out_stride, pi, seq, 1, scratch.v.data(), D, 0,
                           i0 + R, D, false);
    });
  }
}

// dout: (seq*B, H*D), qkv: (seq*B, (H + 2*KV)*D), probs: (B, H, seq, seq) from the forward
// -> dqkv: (seq*B, (H + 2*KV)*D) overwritten. Per (b, h), by tiles of rows as the forward:
//    dP = dO V^T,  dS = P * (dP - rowsum(P * dP)) / sqrt(D) (softmax backward),  dQ = dS K;
//    then by tiles of columns t (P and dS are 0 above the diagonal: rows [t, seq) only):
//    dV = P^T dO,  dK = dS^T Q.
// The H / KV query heads of a group share K, V: their dK, dV sum, so the work is parallel over
// (b, g) pairs, each summing its heads in order (KV = H: one head per pair, as multi-head).
template <class T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* probs, int B, int seq, int H,
                        int KV, int D) {
  namespace ad = attention_detail;
  assert(KV > 0 && H % KV == 0 && "attention: KV heads must divide the query heads");
  const ad::PackedHeads heads{H, KV, D};
  const int width = heads.width(), group = H / KV, ld = ad::round_up(seq, ad::kWidth);
  const std::ptrdiff_t stride = std::ptrdiff_t(B) * width;
  const std::ptrdiff_t out_stride = std::ptrdiff_t(B) * H * D;
  const T scale = T(1) / std::sqrt(T(D));
#pragma omp parallel for if (ad::worth_threads(B * H, seq, D))
  for (int bg = 0; bg < B * KV; ++bg) {
    const int b = bg / KV, g = bg % KV;
    const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(b) * width;  // token 0 of sequence b
    T* dk = dqkv + row + heads.k(g);  // (seq, D) each, rows stride apart
    T* dv = dqkv + row + heads.v(g);
    if (bg + 1 < B * KV) {  // the next pair's rows: K, V, its heads' Q and dO; dQ, dK, dV
      const int b1 = (bg + 1) / KV, g1 = (bg + 1) % KV;
      const std::ptrdiff_t row1 = static_cast<std::ptrdiff_t>(b1) * width;
      for (const std::ptrdiff_t column : {heads.k(g1), heads.v(g1)}) {
        ad::prefetch_rows(qkv + row1 + column, stride, seq, D);
        ad::prefetch_rows(dqkv + row1 + column, stride, seq, D, true);
      }
      for (int h1 = g1 * group; h1 < (g1 + 1) * group; ++h1) {
        ad::prefetch_rows(qkv + row1 + heads.q(h1), stride, seq, D);
        ad::prefetch_rows(dqkv + row1 + heads.q(h1), stride, seq, D, true);
        ad::prefetch_rows(dout + static_cast<std::ptrdiff_t>(b1) * H * D + heads.q(h1), out_stride,
                          seq, D);
      }
    }
    ad::Scratch<T>& scratch = ad::thread_scratch<T>();
    ad::pack_transposed(scratch.transposed, qkv + row + heads.v(g), stride, seq, D);  // V^T
    ad::pack(scratch.k, qkv + row + heads.k(g), stride, seq, D);                      // K
    scratch.ds.resize(static_cast<std::size_t>(seq) * seq);
    T* ds = scratch.ds.data();  // (seq, seq): dP, then dS, by tiles up to tile_columns
    const T *k = scratch.k.data(), *q = nullptr, *d_o = nullptr;  // (seq, D) each, contiguous
    for (int h = g * group; h < (g + 1) * group; ++h) {
      ad::pack(scratch.q, qkv + row + heads.q(h), stride, seq, D);
      ad::pack(scratch.dout, dout + static_cast<std::ptrdiff_t>(b) * H * D + heads.q(h), out_stride,
               seq, D);
      q = scratch.q.data(), d_o = scratch.dout.data();
      T* dq = dqkv + row + heads.q(h);
      const T* p = probs + (static_cast<std::ptrdiff_t>(b) * H + h) * seq * seq;
      const bool accumulate = h != g * group;  // the group's first head writes dK, dV
      ad::for_tiles(seq, [&](int i0, auto tile) {
        constexpr int R = decltype(tile)::value;
        const int n = ad::tile_columns(i0, R, seq);
        const auto at = static_cast<std::ptrdiff_t>(i0) * seq;
        ad::product_transposed<R>(ds + at, seq, d_o + i0 * D, D, scratch.transposed.data(), ld, n,
                                  D);
        for (int i = 0; i < R; ++i)
          ad::softmax_backward_row(ds + at + i * seq, p + at + i * seq, n, scale);
        ad::weighted_rows<R>(dq + i0 * stride, stride, ds + at, seq, 1, k, D, 0, i0 + R, D, false);
      });
      // Column tiles [t0, t0 + R): P and dS read transposed, rows [t0, seq)
      ad::for_tiles(seq, [&](int t0, auto tile) {
        constexpr int R = decltype(tile)::value;
        ad::weighted_rows<R>(dv + t0 * stride, stride, p + t0, 1, seq, d_o, D, t0, seq, D,
                             accumulate);
        ad::weighted_rows<R>(dk + t0 * stride, stride, ds + t0, 1, seq, q, D, t0, seq, D,
                             accumulate);
      });
    }
  }
}

// Multi-head attention (KV = H, GPT-2): qkv and dqkv (seq*B, 3*H*D).
template <class T>
void attention_forward(T* out, T* probs, const T* qkv, int B, int seq, int H, int D) {
  attention_forward(out, probs, qkv, B, seq, H, H, D);
}
template <class T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* probs, int B, int seq, int H,
                        int D) {
  attention_backward(dqkv, dout, qkv, probs, B, seq, H, H, D);
}

}  // namespace trident::nn
