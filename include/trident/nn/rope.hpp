// trident/nn/rope.hpp: rotary position embeddings, applied to the query and key heads, on a
// backend.
//
// RoPE (Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding", 2021) rotates
// each pair of a head's features by an angle proportional to the token's position, so that the
// score q_s . k_t depends on s - t only. Pairs follow the rotate-half convention of GPT-NeoX and
// Llama: feature i pairs with feature i + D/2, rotated by the angle p * theta^(-2i/D), i < D/2.
// The backward is the inverse rotation (angle -p theta^(-2i/D)): a rotation's transpose. Rows are
// tokens in [s, b] order (row r is position r / batch), as the attention's (attention.hpp). One
// body per (row, head).
#pragma once

#include <cassert>
#include <cmath>
#include <cstddef>
#include <vector>

#include "../backend/cpu/cpu.hpp"
#include "../backend/device_buffer.hpp"
#include "../backend/host_device.hpp"
#include "positions.hpp"

namespace trident::nn {

// cos and sin of the rotation angles, computed once per head size D on the host and kept in
// Bk's memory: (positions, D/2) each.
template <class T, class Bk = backend::Cpu>
struct RopeTable {
  int positions, D;
  backend::DeviceBuffer<T, Bk> cos, sin;  // (positions, D/2): of angle p * theta^(-2i/D)

  // theta: the base, 10000 in RoFormer and Llama 2 (500000 in Llama 3). Row p holds the angles
  // of global position at(p): p itself, or a context-parallel rank's p-th token (cp/).
  RopeTable(int positions_, int D_, double theta = 10000, TokenPositions at = {})
      : positions(positions_), D(D_) {
    assert(D % 2 == 0 && "rope: the head size must be even");
    const int half = D / 2;
    std::vector<T> c(std::size_t(positions) * half), s(c.size());
    for (int p = 0; p < positions; ++p)
      for (int i = 0; i < half; ++i) {
        const double angle = at(p) * std::pow(theta, -2.0 * i / D);
        c[std::size_t(p) * half + i] = T(std::cos(angle));
        s[std::size_t(p) * half + i] = T(std::sin(angle));
      }
    cos.allocate(MemoryKind::buffers, c.size(), Fill::none);
    sin.allocate(MemoryKind::buffers, s.size(), Fill::none);
    Bk::to_device(cos.data(), c.data(), c.size() * sizeof(T));  // constants: once
    Bk::to_device(sin.data(), s.data(), s.size() * sizeof(T));
  }
};

namespace rope_detail {
// Rotates head h of row r by the table's angles times direction (+1 forward, -1 inverse).
template <class T>
struct Rotate {
  T* x;
  const T* cos;
  const T* sin;
  int batch, heads, width, D;
  T direction;
  TRIDENT_HOST_DEVICE void operator()(int k) const {
    const int r = k / heads, h = k % heads, half = D / 2;  // locals: see column_blocks.hpp
    const T dir = direction;
    const std::ptrdiff_t at = std::ptrdiff_t(r / batch) * half;  // position r / batch
    const T* c = cos + at;
    const T* s = sin + at;
    T* lo = x + std::ptrdiff_t(r) * width + std::ptrdiff_t(h) * D;
    T* hi = lo + half;
    TRIDENT_SIMD
    for (int i = 0; i < half; ++i) {
      const T x0 = lo[i], x1 = hi[i], si = dir * s[i];
      lo[i] = x0 * c[i] - x1 * si;
      hi[i] = x1 * c[i] + x0 * si;
    }
  }
};
template <class Bk, class T>
void rotate(T* x, const RopeTable<T, Bk>& table, int N, int batch, int heads, int width,
            T direction) {
  assert(N / batch <= table.positions && "rope: more positions than the table holds");
  assert(heads * table.D <= width && "rope: the rotated heads do not fit in a row");
  Bk::for_each(N * heads, Rotate<T>{x, table.cos.data(), table.sin.data(), batch, heads, width,
                                    table.D, direction});
}
}  // namespace rope_detail

// x: (N, width), N = seq*batch rows [s, b] -> x rotated in place on its first `heads` heads of
// table.D columns. For the packed attention input [q (H*D) | k (KV*D) | v (KV*D)] (attention.hpp),
// heads = H + KV rotates q and k and leaves v: the attention's forward and backward then read the
// rotated qkv, and rope_backward turns their dqkv into the gradient of the unrotated projection.
template <class Bk, class T>
void rope_forward(T* x, const RopeTable<T, Bk>& table, int N, int batch, int heads, int width) {
  rope_detail::rotate<Bk>(x, table, N, batch, heads, width, T(1));
}

// dx: (N, width), the gradient of rope_forward's output -> of its input, in place (the same
// heads rotated back).
template <class Bk, class T>
void rope_backward(T* dx, const RopeTable<T, Bk>& table, int N, int batch, int heads, int width) {
  rope_detail::rotate<Bk>(dx, table, N, batch, heads, width, T(-1));
}

}  // namespace trident::nn
