// trident/nn/rope.hpp: rotary position embeddings, applied to the query and key heads.
//
// RoPE (Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding", 2021) rotates
// each pair of a head's features by an angle proportional to the token's position, so that the
// score q_s . k_t depends on s - t only. Pairs follow the rotate-half convention of GPT-NeoX and
// Llama: feature i pairs with feature i + D/2, rotated by the angle p * theta^(-2i/D), i < D/2.
// The backward is the inverse rotation (angle -p theta^(-2i/D)): a rotation's transpose. Rows are
// tokens in [s, b] order (row r is position r / B), as the attention's (attention.hpp).
#pragma once

#include <cassert>
#include <cmath>
#include <cstddef>
#include <vector>

namespace trident::nn {

// cos and sin of the rotation angles, computed once per head size D: (positions, D/2) each.
template <class T>
struct RopeTable {
  int positions, D;
  std::vector<T> cos, sin;  // (positions, D/2): of angle p * theta^(-2i/D)

  // theta: the base, 10000 in RoFormer and Llama 2 (500000 in Llama 3).
  RopeTable(int positions_, int D_, double theta = 10000)
      : positions(positions_), D(D_), cos(std::size_t(positions_) * (D_ / 2)), sin(cos.size()) {
    assert(D % 2 == 0 && "rope: the head size must be even");
    const int half = D / 2;
    for (int p = 0; p < positions; ++p)
      for (int i = 0; i < half; ++i) {
        const double angle = p * std::pow(theta, -2.0 * i / D);
        cos[std::size_t(p) * half + i] = T(std::cos(angle));
        sin[std::size_t(p) * half + i] = T(std::sin(angle));
      }
  }
};

namespace rope_detail {
// Rotates heads 0..heads-1 (D columns each, from column 0) of every row by the table's angles
// times direction (+1: forward, -1: inverse).
template <class T>
void rotate(T* x, const RopeTable<T>& table, int N, int B, int heads, int width, T direction) {
  assert(N / B <= table.positions && "rope: more positions than the table holds");
  assert(heads * table.D <= width && "rope: the rotated heads do not fit in a row");
  const int D = table.D, half = D / 2;
#pragma omp parallel for
  for (int r = 0; r < N; ++r) {
    const std::ptrdiff_t at = static_cast<std::ptrdiff_t>(r / B) * half;  // position r / B
    const T* c = table.cos.data() + at;
    const T* s = table.sin.data() + at;
    for (int h = 0; h < heads; ++h) {
      T* lo = x + static_cast<std::ptrdiff_t>(r) * width + static_cast<std::ptrdiff_t>(h) * D;
      T* hi = lo + half;
      for (int i = 0; i < half; ++i) {
        const T x0 = lo[i], x1 = hi[i], si = direction * s[i];
        lo[i] = x0 * c[i] - x1 * si;
        hi[i] = x1 * c[i] + x0 * si;
      }
    }
  }
}
}  // namespace rope_detail

// x: (N, width), N = seq*B rows [s, b] -> x rotated in place on its first `heads` heads of table.D
// columns. For the packed attention input [q (H*D) | k (KV*D) | v (KV*D)] (attention.hpp),
// heads = H + KV rotates q and k and leaves v: the attention's forward and backward then read the
// rotated qkv, and rope_backward turns their dqkv into the gradient of the unrotated projection.
template <class T>
void rope_forward(T* x, const RopeTable<T>& table, int N, int B, int heads, int width) {
  rope_detail::rotate(x, table, N, B, heads, width, T(1));
}

// dx: (N, width), the gradient of rope_forward's output -> of its input, in place (the same
// heads rotated back).
template <class T>
void rope_backward(T* dx, const RopeTable<T>& table, int N, int B, int heads, int width) {
  rope_detail::rotate(dx, table, N, B, heads, width, T(-1));
}

}  // namespace trident::nn
