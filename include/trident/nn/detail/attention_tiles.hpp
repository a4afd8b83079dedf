// trident/nn/detail/attention_tiles.hpp: the pieces of nn/attention.hpp's fused kernel: packing
// a head's rows, the register-tile products, the causal tiles, per-thread scratch (the row
// softmax: attention_softmax.hpp). Internal: nn/attention.hpp is the interface.
#pragma once

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <vector>
#include "../vectorized.hpp"

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
// xc: (n, D) = x, contiguous. Rows are copied in whole chunks, no library call per row, so
// the loads of many rows are in flight at once (each row lies in its own page: a miss).
template <class T>
void pack(std::vector<T>& xc, const T* x, std::ptrdiff_t ldx, int n, int D) {
  xc.resize(static_cast<std::size_t>(n) * D);
  const int whole = D / kWidth * kWidth;
  T* out = xc.data();
  for (int t = 0; t < n; ++t, out += D) {
    const T* row = x + t * ldx;
    for (int d = 0; d < whole; d += kWidth) LanesMap<T>(out + d) = CLanesMap<T>(row + d);
    for (int d = whole; d < D; ++d) out[d] = row[d];
  }
}
// x: (n, D) rows ldx apart = xc: (n, D) contiguous; pack's inverse, for a head's results.
template <class T>
void unpack(T* x, std::ptrdiff_t ldx, const std::vector<T>& xc, int n, int D) {
  const int whole = D / kWidth * kWidth;
  const T* in = xc.data();
  for (int t = 0; t < n; ++t, in += D) {
    T* row = x + t * ldx;
    for (int d = 0; d < whole; d += kWidth) LanesMap<T>(row + d) = CLanesMap<T>(in + d);
    for (int d = whole; d < D; ++d) row[d] = in[d];
  }
}
// xt: (D, round_up(n, kWidth)) = x^T, zero-padded. staging: (n, D), x's rows packed first,
// so that the transposition reads L1 instead of waiting on one strided miss after another.
template <class T>
void pack_transposed(std::vector<T>& xt, std::vector<T>& staging, const T* x, std::ptrdiff_t ldx,
                     int n, int D) {
  pack(staging, x, ldx, n, D);
  const int ld = round_up(n, kWidth);
  xt.resize(static_cast<std::size_t>(D) * ld);
  const T* xc = staging.data();
  for (int d = 0; d < D; ++d) {
    T* row = xt.data() + static_cast<std::size_t>(d) * ld;  // row d of x^T
    for (int t = 0; t < n; ++t) row[t] = xc[t * D + d];
    std::fill(row + n, row + ld, T(0));
  }
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

// Rows of weighted_rows' float register tiles: R x 2 chunks of accumulators and the 2 chunks of
// x fill the vector registers, 32 with AVX-512 (a float chunk is one register), 16 with AVX2 (two
// per chunk). 8 rows instead of 4 with AVX-512: 16 multiply-adds per 2 loads of x and 8
// broadcasts instead of 8 per 2 and 4 (bench/docs/attention.md: the backward 0.84 of its time
// before). Doubles take two registers a chunk: 4 rows.
#ifdef __AVX512F__
inline constexpr int kWeightedRows = 8;
#else
inline constexpr int kWeightedRows = 4;
#endif

// out: (R, D) rows ldo apart (+)= w: (R, [j0, j1)) . x: ([j0, j1), D) rows ldx apart, where
// w(i, j) = w[i * wi + j * wj] (wi = 1 reads w transposed); accumulate: += instead of =.
// In register tiles of up to kWeightedRows rows by 2 chunks; D's last, partial chunk scalar.
template <int R, class T>
void weighted_rows(T* out, std::ptrdiff_t ldo, const T* w, std::ptrdiff_t wi, std::ptrdiff_t wj,
                   const T* x, std::ptrdiff_t ldx, int j0, int j1, int D, bool accumulate) {
  constexpr int kRows = std::is_same_v<T, float> ? kWeightedRows : 4;
  if constexpr (R > kRows) {
    for (int i = 0; i < R; i += kRows)
      weighted_rows<kRows>(out + i * ldo, ldo, w + i * wi, wi, wj, x, ldx, j0, j1, D, accumulate);
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

// Per-thread scratch, kept between calls (grown, never shrunk): one head's packed matrices.
template <class T>
struct Scratch {
  std::vector<T> transposed;     // (D, seq rounded up): K^T (forward) or V^T (backward)
  std::vector<T> q, k, v, dout;  // (seq, D) each
  std::vector<T> dq, dk, dv;     // (seq, D) each: the backward's results, before unpack
  std::vector<T> ds;             // (seq, seq): dP, then dS
};
template <class T>
Scratch<T>& thread_scratch() {
  thread_local Scratch<T> scratch;
  return scratch;
}

}  // namespace attention_detail

}  // namespace trident::nn
