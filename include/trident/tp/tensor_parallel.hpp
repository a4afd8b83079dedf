// trident/tp/tensor_parallel.hpp: the tensor-parallel group and Megatron's conjugate operators.
//
// Shoeybi et al. 2019 (Megatron-LM), §3: `f` is the identity in forward and an all-reduce in
// backward; `g` is an all-reduce in forward and the identity in backward. Sequence parallelism
// (Korthikanti et al. 2022, §4.2.2) replaces them by an all-gather along the sequence (forward;
// reduce-scatter in backward) before a column-parallel layer, and a reduce-scatter (forward;
// all-gather in backward) after a row-parallel one. Activations are (tokens, features) in
// [s, b] order, so a sequence shard is a contiguous block of rows.
#pragma once

#include <algorithm>
#include <string>

#include "../core/comm.hpp"
#include "../core/error.hpp"

namespace trident {

struct TensorParallel {
  const Comm* comm = nullptr;
  bool sequence_parallel = false;

  int size() const { return comm->size(); }
  int rank() const { return comm->rank(); }
  // Rows this rank holds in the sequence-parallel regions (LayerNorm, residual): all N, or N/t.
  int local_rows(int rows) const { return sequence_parallel ? rows / size() : rows; }

  // f (forward identity) / g backward: nothing to do. f backward, g forward: sum over TP.
  template <class T>
  void all_reduce(T* x, std::size_t n) const {
    comm->all_reduce(Span<T>(x, n));
  }
  // SP: the whole sequence from the shards. full: (t * n_local) elements.
  template <class T>
  void gather_sequence(T* full, const T* local, std::size_t n_local) const {
    comm->all_gather(Span<const T>(local, n_local), Span<T>(full, n_local * size()));
  }
  // SP: this rank's sequence shard of the sum over TP.
  template <class T>
  void reduce_scatter_sequence(T* local, const T* full, std::size_t n_local) const {
    comm->reduce_scatter(Span<const T>(full, n_local * size()), Span<T>(local, n_local));
  }

  // Into the region where every TP rank needs all rows (before a column-parallel layer):
  // f's forward (x_full = x, nothing to do: returns x) or SP's all-gather into `buffer`.
  template <class T>
  const T* enter(const T* x, T* buffer, std::size_t n_local) const {
    if (!sequence_parallel) return x;
    gather_sequence(buffer, x, n_local);
    return buffer;
  }
  // Back out of that region in backward: f's backward (all-reduce of dx_full, in place, then
  // dx = dx_full) or SP's reduce-scatter of dx_full into dx.
  template <class T>
  void enter_backward(T* dx, T* dx_full, std::size_t n_local) const {
    if (!sequence_parallel) {
      all_reduce(dx_full, n_local);
      if (dx != dx_full) std::copy_n(dx_full, n_local, dx);
      return;
    }
    reduce_scatter_sequence(dx, dx_full, n_local);
  }
  // Out of a row-parallel layer: g's forward (all-reduce of the partial sums, result in
  // y_partial, which is then also y) or SP's reduce-scatter into y.
  template <class T>
  void exit(T* y, T* y_partial, std::size_t n_local) const {
    if (!sequence_parallel) {
      all_reduce(y_partial, n_local);
      if (y != y_partial) std::copy_n(y_partial, n_local, y);
      return;
    }
    reduce_scatter_sequence(y, y_partial, n_local);
  }
  // Its backward: g's (identity: returns dy) or SP's all-gather into `buffer`.
  template <class T>
  const T* exit_backward(const T* dy, T* buffer, std::size_t n_local) const {
    if (!sequence_parallel) return dy;
    gather_sequence(buffer, dy, n_local);
    return buffer;
  }
};

}  // namespace trident
