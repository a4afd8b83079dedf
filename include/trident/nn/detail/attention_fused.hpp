// trident/nn/detail/attention_fused.hpp: the CPU's fused causal attention kernel, forward and
// backward (host code: backends whose kernels are host code run it as one launch,
// nn/attention.hpp). Internal: nn/attention.hpp is the interface.
//
// One fused kernel per (sequence, head), in the manner of FlashAttention (Dao et al., 2022) but
// keeping P for the backward: tiles of kTile query rows, their scores in SIMD registers against
// K^T packed once per head (the packing any GEMM does), the causal mask by tiles (no tile
// computes the columns past its last row, rounded up to a SIMD chunk), the scaled, masked
// softmax over each row while it is in L1, then P V. The backward likewise: dP = dO V^T by
// tiles, dS = P * (dP - rowsum(P * dP)) / sqrt(D) fused per row, dQ = dS K, dV = P^T dO,
// dK = dS^T Q. Scratch (packed K^T or V^T, dS) is kept per thread between calls. The forward
// is parallel over (b, h) pairs, the backward over (b, g) pairs (a group's heads sum into one
// dK, dV). Each head's Q, K, V are strided views into the fused matrix, packed into contiguous
// per-thread scratch before its products; its columns of out are written in place.
#pragma once

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <vector>

#include "attention_softmax.hpp"
#include "attention_tiles.hpp"

namespace trident::nn {

namespace attention_detail {

// Asks the cache for the rows that the pair (b, h) of the forward reads and writes: its Q, K, V
// and out (prefetch_rows).
template <class T>
void prefetch_forward(const T* qkv, const T* out, const PackedHeads& heads, int b, int h, int B,
                      int seq) {
  const int g = h / (heads.H / heads.KV), D = heads.D;
  const T* row = qkv + static_cast<std::ptrdiff_t>(b) * heads.width();
  const std::ptrdiff_t stride = std::ptrdiff_t(B) * heads.width();
  for (const std::ptrdiff_t column : {heads.q(h), heads.k(g), heads.v(g)})
    prefetch_rows(row + column, stride, seq, D);
  prefetch_rows(out + static_cast<std::ptrdiff_t>(b) * heads.H * D + heads.q(h),
                std::ptrdiff_t(B) * heads.H * D, seq, D, true);
}

// The backward's pair (b, g): the rows of K, V, its heads' Q and dO; dQ, dK, dV.
template <class T>
void prefetch_backward(const T* qkv, const T* dqkv, const T* dout, const PackedHeads& heads, int b,
                       int g, int B, int seq) {
  const int group = heads.H / heads.KV, D = heads.D;
  const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(b) * heads.width();
  const std::ptrdiff_t stride = std::ptrdiff_t(B) * heads.width();
  for (const std::ptrdiff_t column : {heads.k(g), heads.v(g)}) {
    prefetch_rows(qkv + row + column, stride, seq, D);
    prefetch_rows(dqkv + row + column, stride, seq, D, true);
  }
  for (int h = g * group; h < (g + 1) * group; ++h) {
    prefetch_rows(qkv + row + heads.q(h), stride, seq, D);
    prefetch_rows(dqkv + row + heads.q(h), stride, seq, D, true);
    prefetch_rows(dout + static_cast<std::ptrdiff_t>(b) * heads.H * D + heads.q(h),
                  std::ptrdiff_t(B) * heads.H * D, seq, D);
  }
}

// qkv: (seq*B, (H + 2*KV)*D), rows [s, b], columns [q | k | v]: query head h at columns h*D ..,
//      key head g at (H + g)*D .., value head g at (H + KV + g)*D ..; KV divides H.
//      Under TP a rank passes its H/TP query and KV/TP key/value heads: a group's query heads are
//      consecutive, so they stay on the rank of their K, V head.
// -> probs: (B, H, seq, seq) causal softmax of the scores Q K^T / sqrt(D): row s in columns
//    [0, s], zeros up to row_columns(s, seq), not written beyond (never read);
//    out: (seq*B, H*D), head h at columns h*D ..
template <class T>
void fused_forward(T* out, T* probs, const T* qkv, int B, int seq, int H, int KV, int D) {
  assert(KV > 0 && H % KV == 0 && "attention: KV heads must divide the query heads");
  const PackedHeads heads{H, KV, D};
  const int width = heads.width(), group = H / KV, ld = round_up(seq, kWidth);
  const std::ptrdiff_t stride = std::ptrdiff_t(B) * width;  // between tokens of one sequence
  const std::ptrdiff_t out_stride = std::ptrdiff_t(B) * H * D;
  const T scale = T(1) / std::sqrt(T(D));
#pragma omp parallel for if (worth_threads(B * H, seq, D))
  for (int bh = 0; bh < B * H; ++bh) {
    const int b = bh / H, h = bh % H, g = h / group;
    const T* row = qkv + static_cast<std::ptrdiff_t>(b) * width;       // token 0 of sequence b
    T* p = probs + static_cast<std::ptrdiff_t>(bh) * seq * seq;        // (seq, seq)
    T* o = out + static_cast<std::ptrdiff_t>(b) * H * D + heads.q(h);  // (seq, D)
    if (bh + 1 < B * H) prefetch_forward(qkv, out, heads, (bh + 1) / H, (bh + 1) % H, B, seq);
    Scratch<T>& scratch = thread_scratch<T>();
    pack_transposed(scratch.transposed, scratch.k, row + heads.k(g), stride, seq, D);  // K^T
    pack(scratch.v, row + heads.v(g), stride, seq, D);  // V: (seq, D)
    pack(scratch.q, row + heads.q(h), stride, seq, D);  // Q: (seq, D)
    const T* q = scratch.q.data();
    for_tiles(seq, [&](int i0, auto tile) {
      constexpr int R = decltype(tile)::value;
      const int n = tile_columns(i0, R, seq);
      T* pi = p + static_cast<std::ptrdiff_t>(i0) * seq;  // (R, seq)
      product_transposed<R>(pi, seq, q + i0 * D, D, scratch.transposed.data(), ld, n, D);
      softmax_rows<R>(pi, seq, i0, n, scale);
      // out = P V: (R, D), over the columns [0, i0 + R) where P is not 0
      weighted_rows<R>(o + i0 * out_stride, out_stride, pi, seq, 1, scratch.v.data(), D, 0, i0 + R,
                       D, false);
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
void fused_backward(T* dqkv, const T* dout, const T* qkv, const T* probs, int B, int seq, int H,
                    int KV, int D) {
  assert(KV > 0 && H % KV == 0 && "attention: KV heads must divide the query heads");
  const PackedHeads heads{H, KV, D};
  const int width = heads.width(), group = H / KV, ld = round_up(seq, kWidth);
  const std::ptrdiff_t stride = std::ptrdiff_t(B) * width;
  const std::ptrdiff_t out_stride = std::ptrdiff_t(B) * H * D;
  const T scale = T(1) / std::sqrt(T(D));
#pragma omp parallel for if (worth_threads(B * H, seq, D))
  for (int bg = 0; bg < B * KV; ++bg) {
    const int b = bg / KV, g = bg % KV;
    const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(b) * width;  // token 0 of sequence b
    // the next pair's rows, asked for while this pair computes
    if (bg + 1 < B * KV)
      prefetch_backward(qkv, dqkv, dout, heads, (bg + 1) / KV, (bg + 1) % KV, B, seq);
    Scratch<T>& scratch = thread_scratch<T>();
    pack_transposed(scratch.transposed, scratch.v, qkv + row + heads.v(g), stride, seq, D);
    pack(scratch.k, qkv + row + heads.k(g), stride, seq, D);  // K
    scratch.ds.resize(static_cast<std::size_t>(seq) * seq);
    T* ds = scratch.ds.data();  // (seq, seq): dP, then dS, by tiles up to tile_columns
    const T *k = scratch.k.data(), *q = nullptr, *d_o = nullptr;  // (seq, D) each, contiguous
    for (auto* x : {&scratch.dq, &scratch.dk, &scratch.dv}) x->resize(std::size_t(seq) * D);
    T *dq = scratch.dq.data(), *dk = scratch.dk.data(), *dv = scratch.dv.data();  // likewise
    for (int h = g * group; h < (g + 1) * group; ++h) {
      pack(scratch.q, qkv + row + heads.q(h), stride, seq, D);
      pack(scratch.dout, dout + static_cast<std::ptrdiff_t>(b) * H * D + heads.q(h), out_stride,
           seq, D);
      q = scratch.q.data();
      d_o = scratch.dout.data();
      const T* p = probs + (static_cast<std::ptrdiff_t>(b) * H + h) * seq * seq;
      const bool accumulate = h != g * group;  // the group's first head writes dK, dV
      for_tiles(seq, [&](int i0, auto tile) {
        constexpr int R = decltype(tile)::value;
        const int n = tile_columns(i0, R, seq);
        const auto at = static_cast<std::ptrdiff_t>(i0) * seq;
        product_transposed<R>(ds + at, seq, d_o + i0 * D, D, scratch.transposed.data(), ld, n, D);
        for (int i = 0; i < R; ++i)
          softmax_backward_row(ds + at + i * seq, p + at + i * seq, n, scale);
        weighted_rows<R>(dq + i0 * D, D, ds + at, seq, 1, k, D, 0, i0 + R, D, false);
      });
      unpack(dqkv + row + heads.q(h), stride, scratch.dq, seq, D);
      // Column tiles [t0, t0 + R): P and dS read transposed, rows [t0, seq)
      for_tiles(seq, [&](int t0, auto tile) {
        constexpr int R = decltype(tile)::value;
        weighted_rows<R>(dv + t0 * D, D, p + t0, 1, seq, d_o, D, t0, seq, D, accumulate);
        weighted_rows<R>(dk + t0 * D, D, ds + t0, 1, seq, q, D, t0, seq, D, accumulate);
      });
    }
    unpack(dqkv + row + heads.k(g), stride, scratch.dk, seq, D);
    unpack(dqkv + row + heads.v(g), stride, scratch.dv, seq, D);
  }
}

}  // namespace attention_detail

}  // namespace trident::nn
