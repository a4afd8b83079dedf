// trident/tp/tensor_parallel.hpp: the tensor-parallel group and Megatron's conjugate operators.
//
// Shoeybi et al. 2019 (Megatron-LM), §3, Figure 3: `f` is the identity in forward and an
// all-reduce in backward; `g` is an all-reduce in forward and the identity in backward. Sequence
// parallelism (Korthikanti et al. 2022, §4.2.2) replaces them by an all-gather along the
// sequence (forward; reduce-scatter in backward) before a column-parallel layer, and a
// reduce-scatter (forward; all-gather in backward) after a row-parallel one. Activations are
// (tokens, features) in [s, b] order, so a sequence shard is a contiguous block of rows.
//
// In placements (tensor/placement.hpp), with A the activations' placement outside the layer
// pairs (Replicate, or Shard(0) under SP):
//   f_forward   A -> Replicate          g_forward   Partial -> A
//   f_backward  Partial -> A            g_backward  A -> Replicate
// Each is a redistribute() (tensor/redistribute.hpp) between views of the caller's buffers.
#pragma once

#include <string>

#include "../core/comm.hpp"
#include "../core/error.hpp"
#include "../tensor/redistribute.hpp"

namespace trident {

struct TensorParallel {
  const Comm* comm = nullptr;
  bool sequence_parallel = false;

  int size() const { return comm->size(); }
  int rank() const { return comm->rank(); }
  // Rows this rank holds in the sequence-parallel regions (LayerNorm, residual): all N, or N/t.
  int local_rows(int rows) const { return sequence_parallel ? rows / size() : rows; }
  // The activations' placement there: a block of the sequence (SP), or all of it.
  Placement activation_placement() const {
    return sequence_parallel ? Placement::Shard(0) : Placement::Replicate();
  }
  // The layout of a (rows, cols) tensor (cols = 0: a vector of rows) over this TP group.
  ShardLayout layout(std::int64_t rows, std::int64_t cols, Placement p,
                     std::int64_t padded = 0) const {
    return ShardLayout(cols ? std::vector<std::int64_t>{rows, cols} : std::vector{rows}, p, size(),
                       rank(), padded);
  }

  // Megatron's f, forward: x (n, cols) in the activations' placement to (N, cols) Replicate.
  // Without SP the identity (returns x); with SP the all-gather into x_full (returns x_full).
  template <class T>
  [[nodiscard]] const T* f_forward(const T* x, T* x_full, int N, int cols) const {
    return to_replicate(x, x_full, N, cols);
  }
  // f, backward: dx_full (N, cols) Partial to dx (n, cols): the all-reduce (dx may be dx_full)
  // or, with SP, the reduce-scatter.
  template <class T>
  void f_backward(T* dx, const T* dx_full, int N, int cols) const {
    sum_partial(dx, dx_full, N, cols);
  }
  // g, forward: the row-parallel layer's partial sums y_partial (N, cols) to y (n, cols): the
  // all-reduce (y may be y_partial) or, with SP, the reduce-scatter.
  template <class T>
  void g_forward(T* y, const T* y_partial, int N, int cols) const {
    sum_partial(y, y_partial, N, cols);
  }
  // g, backward: dy (n, cols) to (N, cols) Replicate: the identity (returns dy) or, with SP,
  // the all-gather into dy_full (returns dy_full).
  template <class T>
  [[nodiscard]] const T* g_backward(const T* dy, T* dy_full, int N, int cols) const {
    return to_replicate(dy, dy_full, N, cols);
  }

  // The bare collectives over TP, for what is outside the layer pairs (e.g. the sum of the
  // gradients of SP-replicated parameters).
  template <class T>
  void all_reduce(T* x, std::size_t n) const {
    comm->all_reduce(Span<T>(x, n));
  }

 private:
  template <class T>
  [[nodiscard]] const T* to_replicate(const T* x, T* full, int N, int cols) const {
    if (!sequence_parallel) return x;
    redistribute<T>({x, layout(N, cols, Placement::Shard(0))},
                    {full, layout(N, cols, Placement::Replicate())}, *comm);
    return full;
  }
  template <class T>
  void sum_partial(T* out, const T* partial, int N, int cols) const {
    redistribute<T>({partial, layout(N, cols, Placement::Partial())},
                    {out, layout(N, cols, activation_placement())}, *comm);
  }
};

}  // namespace trident
