// trident/nn/detail/attention_softmax.hpp: the scaled, causally masked softmax of
// nn/attention.hpp's fused kernel over score rows held in L1, forward and backward. Internal:
// nn/attention.hpp is the interface.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "attention_tiles.hpp"

namespace trident::nn {

namespace attention_detail {

// The masks of a chunk cut at lane k (0 < k <= kWidth): keep(k) is 1 in lanes [0, k) and 0 in
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

// x: a register tile's R score rows, rows ldx apart, row i that of query i0 + i, computed over
// [0, n) -> x: each row's softmax as softmax_row(x + i * ldx, i0 + i + 1, n, scale). The tiles of
// for_tiles (kTile rows from a multiple of kTile, n = tile_columns) have every row's diagonal in
// their last chunk, [0, n - kWidth) unmasked for all rows: those rows are done together, pass
// by pass, so that the rows' reductions (max, sum) overlap instead of each row waiting on the
// previous one's (5% of the forward, bench/docs/attention.md); other tiles row by row.
template <int R, class T>
void softmax_rows(T* x, std::ptrdiff_t ldx, int i0, int n, T scale) {
  const int full = n - kWidth;  // columns below every row's diagonal chunk
  if (R == 1 || full < 0 || full % kWidth != 0 || i0 < full || i0 + R > n) {
    for (int i = 0; i < R; ++i) softmax_row(x + i * ldx, i0 + i + 1, n, scale);
    return;
  }
  Lanes<T> acc[R];
  T m[R];  // each row's max, then the inverse of its sum
  for (int i = 0; i < R; ++i) acc[i] = LanesMap<T>(x + i * ldx + full) + hide<T>(i0 + i + 1 - full);
  for (int c = 0; c < full; c += kWidth)
    for (int i = 0; i < R; ++i) acc[i] = acc[i].max(LanesMap<T>(x + i * ldx + c));
  for (int i = 0; i < R; ++i) m[i] = acc[i].maxCoeff(), acc[i].setZero();
  for (int c = 0; c < full; c += kWidth)
    for (int i = 0; i < R; ++i) {
      LanesMap<T> e(x + i * ldx + c);
      e = ((e - m[i]) * scale).exp();
      acc[i] += e;
    }
  for (int i = 0; i < R; ++i) {  // the diagonal's chunk: lanes past query i0 + i become 0
    const int cut = i0 + i + 1 - full;
    LanesMap<T> e(x + i * ldx + full);
    e = ((e + hide<T>(cut) - m[i]) * scale).exp() * keep<T>(cut);
    acc[i] += e;
    m[i] = T(1) / acc[i].sum();
  }
  for (int c = 0; c < n; c += kWidth)
    for (int i = 0; i < R; ++i) LanesMap<T>(x + i * ldx + c) *= m[i];
}

}  // namespace attention_detail

}  // namespace trident::nn
