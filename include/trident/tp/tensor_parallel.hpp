// trident/tp/tensor_parallel.hpp: the tensor-parallel group and Megatron's conjugate operators,
// on a backend Bk.
//
// Shoeybi et al. 2019 (Megatron-LM), §3, Figure 3: `f` is the identity in forward and an
// all-reduce in backward; `g` is an all-reduce in forward and the identity in backward. Sequence
// parallelism (Korthikanti et al. 2022, §4.2.2) replaces them by an all-gather along the
// sequence (forward; reduce-scatter in backward) before a column-parallel layer, and a
// reduce-scatter (forward; all-gather in backward) after a row-parallel one. Activations are
// (tokens, features) in [s, b] order, so a sequence shard is a contiguous block of rows and
// each operator is one bare collective on the caller's buffers, in Bk's memory, through the
// group's DeviceComm (backend/device_comm.hpp: MPI on host memory, NCCL or host staging on a
// device).
//
// In placements (tensor/placement.hpp), with A the activations' placement outside the layer
// pairs (Replicate, or Shard(0) under SP):
//   f_forward   A -> Replicate          g_forward   Partial -> A
//   f_backward  Partial -> A            g_backward  A -> Replicate
#pragma once

#include <string>

#include "../backend/cpu/cpu.hpp"
#include "../backend/device_comm.hpp"
#include "../core/comm.hpp"
#include "../core/error.hpp"
#include "../cp/context_parallel.hpp"
#include "../tensor/placement.hpp"

namespace trident {

template <class Bk = backend::Cpu>
struct TensorParallel {
  const Comm* comm = nullptr;
  bool sequence_parallel = false;
  backend::DeviceComm<Bk> device;  // the group's collectives on Bk's buffers
  // The layer's other split: the context-parallel ring over which the sequence's tokens are
  // divided (cp/context_parallel.hpp; size 1 without CP). A layer sees both through this object.
  ContextParallel<Bk> cp;

  TensorParallel() = default;
  // The collectives take Bk's path without NCCL (MPI on host memory, else host staging).
  TensorParallel(const Comm* c, bool sp = false)  // NOLINT(google-explicit-constructor)
      : comm(c), sequence_parallel(sp) {
    if (c) device = backend::DeviceComm<Bk>(*c, backend::DeviceComm<Bk>::staged_path());
  }
  TensorParallel(const Comm* c, bool sp, backend::DeviceComm<Bk> d)
      : comm(c), sequence_parallel(sp), device(std::move(d)) {}

  int size() const { return comm->size(); }
  int rank() const { return comm->rank(); }
  // Tokens per sequence on this rank (of seq: all of them without CP), and their positions.
  int local_seq(int seq) const { return cp.local_seq(seq); }
  nn::TokenPositions positions(int local) const { return cp.positions(local); }
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

  // The bare sum over TP, in place, for what is outside the layer pairs (e.g. the gradients of
  // SP-replicated parameters, the vocab-parallel loss's row statistics).
  template <class T>
  void all_reduce(T* x, std::size_t n, ReduceOp op = ReduceOp::sum) const {
    if (size() > 1) device.all_reduce(x, n, op);
  }
  // in: (n) -> out: (size * n), the ranks' pieces in rank order.
  template <class T>
  void all_gather(const T* in, T* out, std::size_t n) const {
    device.all_gather(in, out, n);
  }

 private:
  template <class T>
  [[nodiscard]] const T* to_replicate(const T* x, T* full, int N, int cols) const {
    if (!sequence_parallel) return x;
    device.all_gather(x, full, std::size_t(local_rows(N)) * cols);
    return full;
  }
  template <class T>
  void sum_partial(T* out, const T* partial, int N, int cols) const {
    if (sequence_parallel)
      return device.reduce_scatter(partial, out, std::size_t(local_rows(N)) * cols);
    if (out != partial) Bk::copy(out, partial, std::size_t(N) * cols * sizeof(T));
    if (size() > 1) device.all_reduce(out, std::size_t(N) * cols);
  }
};

// A class template's name as the type of a group on the CPU: `const TensorParallel tp{&comm}`.
TensorParallel(const Comm*)->TensorParallel<backend::Cpu>;
TensorParallel(const Comm*, bool)->TensorParallel<backend::Cpu>;

}  // namespace trident
