// trident/cp/detail/attention_blocks.hpp: ring attention's host kernels — one block of keys and
// values against this rank's queries, forward and backward (cp/ring_attention.hpp is the
// interface; backends whose kernels are host code run each as one launch).
//
// A rank's tokens and a block's are chunks of equal length L (cp/context_parallel.hpp); with the
// causal mask a (query chunk, key chunk) pair is either all visible (the keys come first), the
// diagonal (the same chunk: key j visible to query i when j <= i) or all masked (skipped). Per
// pair and head, with S = Q K^T / sqrt(D):
//   forward:  the online softmax (Milakov & Gimelshein 2018): m' = max(m, rowmax S),
//             l' = l e^(m - m') + rowsum e^(S - m'), O' = O e^(m - m') + e^(S - m') V;
//             e^(S - m') is kept in the probabilities' columns of the keys' global positions,
//             and finish() turns each row into P = e^(S - m) / l and O into O / l.
//   backward: with P from the forward and Delta = rowsum(dO * O) (FlashAttention-2's D),
//             dV += P^T dO, dS = P * (dO V^T - Delta) / sqrt(D), dQ += dS K, dK += dS^T Q.
// Pairs run in a fixed order and each thread owns its (b, h) or (b, g) rows; every product lands
// in a thread's own (aligned) matrix and is added to the strided destination element by element,
// so no sum's order depends on where a buffer happens to be aligned: results are bitwise the
// same on every run. Shapes (per rank): qkv (Tl*batch, (H + 2KV) D) rows [s, b];
// a block kv (Tl*batch, 2 KV D), K heads then V heads; out and dout (Tl*batch, H D);
// probs (batch, H, Tl, T) with T = cp Tl, columns by global key position (defined up to each
// row's position: finish()); m, l, delta (batch, H, Tl).
#pragma once

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "../../backend/host_device.hpp"
#include "../../detail/eigen.hpp"

namespace trident::cp_detail {

using Chunks = std::vector<std::pair<int, int>>;  // (first global position, length) each

struct Geometry {
  int batch, Tl, T, H, KV, D;
  int width() const { return (H + 2 * KV) * D; }  // a qkv row
  int kv_width() const { return 2 * KV * D; }     // a block's row
};

enum class Visible { all, diagonal, none };
inline Visible visible(int query_start, int key_start, int L) {
  if (key_start + L <= query_start) return Visible::all;
  return key_start == query_start ? Visible::diagonal : Visible::none;
}

template <class T>
using Rows = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using View = Eigen::Map<Rows<T>, 0, Eigen::OuterStride<>>;
template <class T>
using ConstView = Eigen::Map<const Rows<T>, 0, Eigen::OuterStride<>>;

// The L rows from local row `row` of sequence b, columns [col, col + D), of a [s, b] matrix
// `width` wide.
template <class T>
ConstView<T> rows_of(const T* m, int row, int b, int col, int L, int D, int batch, int width) {
  const std::ptrdiff_t stride = std::ptrdiff_t(batch) * width;
  return ConstView<T>(m + (std::ptrdiff_t(row) * batch + b) * width + col, L, D,
                      Eigen::OuterStride<>(stride));
}
template <class T>
View<T> rows_of(T* m, int row, int b, int col, int L, int D, int batch, int width) {
  const std::ptrdiff_t stride = std::ptrdiff_t(batch) * width;
  return View<T>(m + (std::ptrdiff_t(row) * batch + b) * width + col, L, D,
                 Eigen::OuterStride<>(stride));
}

// dst += src, element by element (dst a strided view, src a thread's own matrix).
template <class Dst, class Src>
void add_to(Dst&& dst, const Src& src) {
  for (Eigen::Index i = 0; i < src.rows(); ++i)
    for (Eigen::Index j = 0; j < src.cols(); ++j) dst(i, j) += src(i, j);
}

// The tiles of a visible (query chunk, key chunk) pair: f(i0, i1, keys) for query rows
// [i0, i1) (kTile at most, so that a tile's scores stay in cache) against the chunk's first
// `keys` keys: all of them, or on the diagonal the keys up to the tile's last row, so that the
// masked half above the diagonal is (but for the tiles' own corners) not computed.
inline constexpr int kTile = 64;
template <class F>
void for_each_tile(Visible v, int L, int Lk, F&& f) {
  for (int i0 = 0; i0 < L; i0 += kTile) {
    const int i1 = std::min(L, i0 + kTile);
    f(i0, i1, v == Visible::all ? Lk : i1);
  }
}

// One tile of a block's walk: query rows [r0, r0 + rows) of this rank (i0: the first one's index
// in its chunk) against `keys` keys from local row kc_row of the block, whose chunk starts at
// global position kc; v says how the pair of chunks sees each other.
struct Tile {
  int r0, rows, i0, kc, kc_row, keys;
  Visible v;
};
// f(tile) for every tile of every visible (query chunk, key chunk) pair, in a fixed order.
template <class F>
void for_each_visible_tile(const Chunks& q, const Chunks& k, F&& f) {
  int qa_row = 0;
  for (const auto& [qa, L] : q) {
    int kc_row = 0;
    for (const auto& [kc, Lk] : k) {
      const Visible v = visible(qa, kc, L);
      const int first = kc, row = kc_row;
      if (v != Visible::none)
        for_each_tile(v, L, Lk, [&](int i0, int i1, int keys) {
          f(Tile{qa_row + i0, i1 - i0, i0, first, row, keys, v});
        });
      kc_row += Lk;
    }
    qa_row += L;
  }
}

// A thread's scratch matrix of rows x cols, in storage allocated once (aligned, so that its
// products' order is the same on every run) and reused by every tile.
template <class T>
struct Scratch {
  Rows<T> storage;
  Eigen::Map<Rows<T>, Eigen::AlignedMax> view(int rows, int cols) {
    if (storage.size() < Eigen::Index(rows) * cols) storage.resize(rows, cols);
    return {storage.data(), rows, cols};
  }
};

// Before the first block: m = -inf, l = 0, out = 0.
template <class T>
void start(T* out, T* m, T* l, const Geometry& g) {
  const std::size_t stats = std::size_t(g.batch) * g.H * g.Tl;
  std::fill(m, m + stats, -std::numeric_limits<T>::infinity());
  std::fill(l, l + stats, T(0));
  std::fill(out, out + std::size_t(g.Tl) * g.batch * g.H * g.D, T(0));
}

// One block: this rank's queries (chunks q) against the keys and values of kv (chunks k).
// The kept probabilities hold e^(S - m') with m' the row's maximum after this block, recorded per
// (row, key chunk) in used (batch, H, Tl, T / L) for finish() to rescale: one exponential per
// score.
template <class T>
void block_forward(T* out, T* probs, T* m, T* l, T* used, const T* qkv, const T* kv,
                   const Geometry& g, const Chunks& q, const Chunks& k) {
  const int pairs = g.batch * g.H, group = g.H / g.KV, D = g.D, L = q[0].second, chunks = g.T / L;
  const T scale = T(1) / std::sqrt(T(D));
#pragma omp parallel for schedule(dynamic)
  for (int bh = 0; bh < pairs; ++bh) {
    const int b = bh / g.H, h = bh % g.H, kvh = h / group;
    Scratch<T> scores, products;
    for_each_visible_tile(q, k, [&](const Tile& t) {
      auto Q = rows_of(qkv, t.r0, b, h * D, t.rows, D, g.batch, g.width());
      auto O = rows_of(out, t.r0, b, h * D, t.rows, D, g.batch, g.H * D);
      auto K = rows_of(kv, t.kc_row, b, kvh * D, t.keys, D, g.batch, g.kv_width());
      auto V = rows_of(kv, t.kc_row, b, (g.KV + kvh) * D, t.keys, D, g.batch, g.kv_width());
      auto S = scores.view(t.rows, t.keys);
      S.noalias() = scale * (Q * K.transpose());
      for (int i = 0; i < t.rows; ++i) {
        const std::size_t at = std::size_t(bh) * g.Tl + t.r0 + i;
        const T* s = S.data() + std::ptrdiff_t(i) * t.keys;
        const int n = t.v == Visible::diagonal ? t.i0 + i + 1 : t.keys;  // visible keys
        T mx = m[at];
        TRIDENT_SIMD_MAX(mx)
        for (int j = 0; j < n; ++j) mx = backend::math::max(mx, s[j]);
        const T alpha = backend::math::exp(m[at] - mx);  // 0 before the first block
        T* kept = probs + at * g.T + t.kc;
        T sum = 0;
        TRIDENT_SIMD_SUM(sum)
        for (int j = 0; j < n; ++j) {
          const T e = backend::math::exp(s[j] - mx);
          kept[j] = e;
          sum += e;
        }
        for (int j = n; j < t.keys; ++j) kept[j] = 0;  // past the diagonal
        used[at * chunks + t.kc / L] = mx;
        l[at] = l[at] * alpha + sum;
        m[at] = mx;
        O.row(i) *= alpha;
      }
      const ConstView<T> E(probs + (std::size_t(bh) * g.Tl + t.r0) * g.T + t.kc, t.rows, t.keys,
                           Eigen::OuterStride<>(g.T));  // e^(S - m'), kept
      auto PV = products.view(t.rows, D);
      PV.noalias() = E * V;
      add_to(O, PV);
    });
  }
}

// After the last block: out /= l, and each kept row becomes P = e^(S - m) / l (each key chunk's
// e^(S - m') times e^(m' - m) / l). Only what the backward reads is defined: a row's columns up to
// its position, and zeros from there to the end of its diagonal tile.
template <class T>
void finish(T* out, T* probs, const T* m, const T* l, const T* used, const Geometry& g,
            const Chunks& q) {
  const int pairs = g.batch * g.H, D = g.D, L = q[0].second, chunks = g.T / L;
#pragma omp parallel for
  for (int bh = 0; bh < pairs; ++bh) {
    const int b = bh / g.H, h = bh % g.H;
    int row = 0;
    for (const auto& [qa, Lq] : q) {
      auto O = rows_of(out, row, b, h * D, Lq, D, g.batch, g.H * D);
      for (int i = 0; i < Lq; ++i) {
        const std::size_t at = std::size_t(bh) * g.Tl + row + i;
        const T inv = T(1) / l[at];
        O.row(i) *= inv;
        T* p = probs + at * g.T;
        const int seen = qa + i + 1;
        for (int c = 0; c * L < seen; ++c) {
          const T f = backend::math::exp(used[at * chunks + c] - m[at]) * inv;
          const int end = std::min(seen, (c + 1) * L);
          TRIDENT_SIMD
          for (int j = c * L; j < end; ++j) p[j] *= f;
        }
      }
      row += Lq;
    }
  }
}

// delta (batch, H, Tl) = rowsum(dO * O) per head; dq: the Q columns of dqkv zeroed.
template <class T>
void start_backward(T* delta, T* dqkv, const T* dout, const T* out, const Geometry& g) {
  const int pairs = g.batch * g.H, D = g.D;
#pragma omp parallel for
  for (int bh = 0; bh < pairs; ++bh) {
    const int b = bh / g.H, h = bh % g.H;
    auto dO = rows_of(dout, 0, b, h * D, g.Tl, D, g.batch, g.H * D);
    auto O = rows_of(out, 0, b, h * D, g.Tl, D, g.batch, g.H * D);
    for (int i = 0; i < g.Tl; ++i) {
      T sum = 0;  // in order: no SIMD reduction, whose split could depend on alignment
      for (int k = 0; k < D; ++k) sum += dO(i, k) * O(i, k);
      delta[std::size_t(bh) * g.Tl + i] = sum;
    }
    rows_of(dqkv, 0, b, h * D, g.Tl, D, g.batch, g.width()).setZero();
  }
}

// One block's backward: dQ (dqkv's Q columns) accumulates; dkv (the block's shape) is
// overwritten with this rank's share of the block's dK and dV.
template <class T>
void block_backward(T* dqkv, T* dkv, const T* dout, const T* qkv, const T* kv, const T* probs,
                    const T* delta, const Geometry& g, const Chunks& q, const Chunks& k) {
  const int pairs = g.batch * g.KV, group = g.H / g.KV, D = g.D;
  const T scale = T(1) / std::sqrt(T(D));
#pragma omp parallel for schedule(dynamic)
  for (int bg = 0; bg < pairs; ++bg) {
    const int b = bg / g.KV, kvh = bg % g.KV;
    auto dK = rows_of(dkv, 0, b, kvh * D, g.Tl, D, g.batch, g.kv_width());
    auto dV = rows_of(dkv, 0, b, (g.KV + kvh) * D, g.Tl, D, g.batch, g.kv_width());
    dK.setZero(), dV.setZero();
    Scratch<T> scores, products;
    for (int h = kvh * group; h < (kvh + 1) * group; ++h) {
      const std::size_t bh = std::size_t(b) * g.H + h;
      for_each_visible_tile(q, k, [&](const Tile& t) {
        auto Q = rows_of(qkv, t.r0, b, h * D, t.rows, D, g.batch, g.width());
        auto dQ = rows_of(dqkv, t.r0, b, h * D, t.rows, D, g.batch, g.width());
        auto dO = rows_of(dout, t.r0, b, h * D, t.rows, D, g.batch, g.H * D);
        auto K = rows_of(kv, t.kc_row, b, kvh * D, t.keys, D, g.batch, g.kv_width());
        auto V = rows_of(kv, t.kc_row, b, (g.KV + kvh) * D, t.keys, D, g.batch, g.kv_width());
        const ConstView<T> P(probs + (bh * g.Tl + t.r0) * g.T + t.kc, t.rows, t.keys,
                             Eigen::OuterStride<>(g.T));
        auto dv = products.view(t.keys, D);
        dv.noalias() = P.transpose() * dO;
        add_to(dV.middleRows(t.kc_row, t.keys), dv);
        auto dS = scores.view(t.rows, t.keys);
        dS.noalias() = dO * V.transpose();  // dP: (rows, keys)
        for (int i = 0; i < t.rows; ++i) {
          const T d = delta[bh * g.Tl + t.r0 + i];
          T* s = dS.data() + std::ptrdiff_t(i) * t.keys;
          const T* p = P.data() + std::ptrdiff_t(i) * g.T;
          TRIDENT_SIMD
          for (int j = 0; j < t.keys; ++j) s[j] = p[j] * (s[j] - d) * scale;
        }
        auto dq = products.view(t.rows, D);
        dq.noalias() = dS * K;
        add_to(dQ, dq);
        auto dk = products.view(t.keys, D);
        dk.noalias() = dS.transpose() * Q;
        add_to(dK.middleRows(t.kc_row, t.keys), dk);
      });
    }
  }
}

}  // namespace trident::cp_detail
