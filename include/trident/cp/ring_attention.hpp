// trident/cp/ring_attention.hpp: causal attention over a context-parallel ring (Liu et al. 2023,
// "Ring Attention with Blockwise Transformers"), forward and backward side by side.
//
// Each of cp ranks holds Tl = T / cp tokens of every sequence (cp/context_parallel.hpp: zigzag or
// contiguous chunks). Forward: the rank's own keys and values form the first block; at step s it
// computes its queries against the block of rank r - s while that block travels on to rank r + 1
// and the next arrives from r - 1 (point-to-point, overlapped with the block's computation),
// merging the partial results with the online softmax (cp/detail/attention_blocks.hpp). After
// cp - 1 shifts every query has seen every key before it. Backward: the blocks travel the same
// way; the gradient of block j (its dK, dV) starts at rank j + 1 and collects each rank's share as
// it follows the block around the ring, the owner adding its own share when it comes home. Per
// rank and layer, with a block of Tl * batch rows of 2 KV D elements (the keys and values of its
// heads):
//     forward:  cp - 1 blocks sent      backward:  cp - 1 blocks of K, V and cp - 1 of dK, dV
// The merge order is fixed (the ring's), so reruns are bitwise identical. The probabilities kept
// for the backward are (batch, H, Tl, T): 1/cp of one rank's (batch, H, T, T).
//
// The kernels are host code: backends with kHostKernels (Cpu, Emulated) run them; the CUDA
// backend has no ring kernel yet and the trainer says so (train/options.hpp).
#pragma once

#include <cstring>
#include <utility>

#include "../backend/device_buffer.hpp"
#include "../backend/ops.hpp"
#include "../core/message_tags.hpp"
#include "context_parallel.hpp"
#include "detail/attention_blocks.hpp"
#include "ring_trace.hpp"

namespace trident {

namespace cp_detail {
// kv (Tl*batch, 2 KV D) <-> the K, V columns of qkv (Tl*batch, (H + 2 KV) D).
template <class T>
void pack_keys(T* kv, const T* qkv, const Geometry& g) {
  const std::size_t rows = std::size_t(g.Tl) * g.batch, n = g.kv_width();
  for (std::size_t r = 0; r < rows; ++r)
    std::memcpy(kv + r * n, qkv + r * g.width() + std::size_t(g.H) * g.D, n * sizeof(T));
}
template <class T>
void unpack_keys(T* dqkv, const T* dkv, const Geometry& g) {
  const std::size_t rows = std::size_t(g.Tl) * g.batch, n = g.kv_width();
  for (std::size_t r = 0; r < rows; ++r)
    std::memcpy(dqkv + r * g.width() + std::size_t(g.H) * g.D, dkv + r * n, n * sizeof(T));
}
}  // namespace cp_detail

// qkv: (Tl*batch, (H + 2 KV) D) this rank's tokens, rows [s, b], columns [q | k | v] as in
// nn/attention.hpp -> out: (Tl*batch, H D); probs: (batch, H, Tl, T) the causal softmax rows of
// this rank's queries over all T = cp Tl keys (by global position), for the backward.
// Collective over the cp group.
template <class B, class T>
void ring_attention_forward(const ContextParallel<B>& cp, T* out, T* probs, const T* qkv, int batch,
                            int Tl, int H, int KV, int D) {
  static_assert(B::kHostKernels, "ring attention's kernels are host code");
  const cp_detail::Geometry g{batch, Tl, Tl * cp.size(), H, KV, D};
  const std::size_t n = std::size_t(Tl) * batch * g.kv_width(), stats = std::size_t(batch) * H * Tl;
  const auto mine = cp.chunks(Tl, cp.rank());
  const std::size_t chunks = g.T / mine[0].second;  // of the sequence
  backend::DeviceBuffer<T, B> cur(MemoryKind::buffers, n, Fill::none),
      next(MemoryKind::buffers, n, Fill::none), m(MemoryKind::buffers, stats, Fill::none),
      l(MemoryKind::buffers, stats, Fill::none),
      used(MemoryKind::buffers, stats * chunks, Fill::none);
  B::host_kernel([&] {
    cp_detail::pack_keys(cur.data(), qkv, g);
    cp_detail::start(out, m.data(), l.data(), g);
  });
  RingTrace& trace = ring_trace();
  const int call = trace.on() ? trace.begin_call() : 0;
  for (int s = 0; s < cp.size(); ++s) {
    const int source = (cp.rank() - s + cp.size()) % cp.size();
    RingStep step{call, false, s, source, ring_clock()};
    typename ContextParallel<B>::Shift shift;
    const bool more = s + 1 < cp.size();
    if (more) shift = cp.shift(cur.data(), next.data(), n, message_tags::kRingKeys);
    step.begin = ring_clock();
    B::host_kernel([&] {
      cp_detail::block_forward(out, probs, m.data(), l.data(), used.data(), qkv, cur.data(), g,
                               mine, cp.chunks(Tl, source));
    });
    step.computed = ring_clock();
    if (more) shift.wait(), std::swap(cur, next);
    step.arrived = ring_clock();
    trace.add(step);
  }
  B::host_kernel([&] { cp_detail::finish(out, probs, m.data(), l.data(), used.data(), g, mine); });
}

// dout: (Tl*batch, H D); qkv, out and probs from the forward -> dqkv: (Tl*batch, (H + 2 KV) D),
// overwritten: this rank's queries' dQ and its own keys' and values' dK, dV (summed over every
// rank's queries). Collective over the cp group.
template <class B, class T>
void ring_attention_backward(const ContextParallel<B>& cp, T* dqkv, const T* dout, const T* qkv,
                             const T* out, const T* probs, int batch, int Tl, int H, int KV,
                             int D) {
  static_assert(B::kHostKernels, "ring attention's kernels are host code");
  using Buf = backend::DeviceBuffer<T, B>;
  const cp_detail::Geometry g{batch, Tl, Tl * cp.size(), H, KV, D};
  const std::size_t n = std::size_t(Tl) * batch * g.kv_width();
  auto buffer = [&](std::size_t size) { return Buf(MemoryKind::buffers, size, Fill::none); };
  Buf cur = buffer(n), next = buffer(n), own = buffer(n), arrived = buffer(n),
      delta = buffer(std::size_t(batch) * H * Tl);
  Buf share[2] = {buffer(cp.size() > 2 ? n : 0), buffer(cp.size() > 1 ? n : 0)};  // s % 2
  const auto mine = cp.chunks(Tl, cp.rank());
  B::host_kernel([&] {
    cp_detail::pack_keys(cur.data(), qkv, g);
    cp_detail::start_backward(delta.data(), dqkv, dout, out, g);
  });
  typename ContextParallel<B>::Shift gradients;  // a block's dK, dV on its way home
  RingTrace& trace = ring_trace();
  const int call = trace.on() ? trace.begin_call() : 0;
  for (int s = 0; s < cp.size(); ++s) {
    const int source = (cp.rank() - s + cp.size()) % cp.size();
    RingStep step{call, true, s, source, ring_clock()};
    typename ContextParallel<B>::Shift keys;
    const bool more = s + 1 < cp.size();
    if (more) keys = cp.shift(cur.data(), next.data(), n, message_tags::kRingKeys);
    T* part = s == 0 ? own.data() : share[s % 2].data();
    step.begin = ring_clock();
    B::host_kernel([&] {
      cp_detail::block_backward(dqkv, part, dout, qkv, cur.data(), probs, delta.data(), g, mine,
                                cp.chunks(Tl, source));
    });
    step.computed = ring_clock();
    if (s >= 2) {  // the block's gradient so far, from the ranks before this one
      gradients.wait();
      backend::accumulate<B>(part, arrived.data(), n);
    }
    if (s >= 1) gradients = cp.shift(part, arrived.data(), n, message_tags::kRingGradients);
    if (more) keys.wait(), std::swap(cur, next);
    step.arrived = ring_clock();
    trace.add(step);
  }
  if (cp.size() > 1) {  // this rank's own block, home from its last visitor
    gradients.wait();
    backend::accumulate<B>(own.data(), arrived.data(), n);
  }
  B::host_kernel([&] { cp_detail::unpack_keys(dqkv, own.data(), g); });
}

}  // namespace trident
