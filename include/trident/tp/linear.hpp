// trident/tp/linear.hpp: Megatron's ColumnParallelLinear and RowParallelLinear
// (Shoeybi et al. 2019, §3, Figure 3; weights stored [in, out] as GPT-2's Conv1D).
//
//   ColumnParallelLinear  y = f(x) W_r + b_r       W = [W_1 ... W_t] split by output columns
//   RowParallelLinear     y = g(x_r W_r) + b       W = [W_1; ...; W_t] split by input rows
//
// A column-parallel layer followed by a row-parallel one (attention: QKV then projection; MLP:
// FC then projection) costs one all-reduce in forward (g) and one in backward (f). With
// sequence parallelism (Korthikanti et al. 2022) f becomes an all-gather along the sequence
// and g a reduce-scatter, and the rows outside the pair are this rank's sequence shard.
//
// Sizes: N rows (tokens of the microbatch), n = tp.local_rows(N) rows in the
// sequence-parallel regions (N, or N/t with SP).
#pragma once

#include <algorithm>

#include "../nn/linear.hpp"
#include "../tensor/matrix.hpp"
#include "tensor_parallel.hpp"

namespace trident {

template <class T>
struct ColumnParallelLinear {
  int in = 0;   // input features (all of them)
  int out = 0;  // this rank's output features

  // x: (n, in); x_full: (N, in) buffer used under SP; y: (N, out).
  // Returns the (N, in) input the product used (x, or x_full) — keep it for backward.
  const T* forward(const TensorParallel& tp, T* y, const T* x, T* x_full, const T* w, const T* b,
                   int N) const {
    const T* used = tp.enter(x, x_full, std::size_t(tp.local_rows(N)) * in);
    nn::linear_forward(y, used, w, b, N, in, out);
    return used;
  }
  // dy: (N, out); dx_full: (N, in) scratch; dx: (n, in), may be dx_full without SP.
  // dw, db accumulate. part (nn/backward_part.hpp): the weight half needs no communication.
  void backward(const TensorParallel& tp, T* dx, T* dx_full, T* dw, T* db, const T* dy,
                const T* x_used, const T* w, int N,
                nn::BackwardPart part = nn::BackwardPart::both) const {
    nn::linear_backward(dx_full, dw, db, dy, x_used, w, N, in, out, part);
    if (nn::computes_input(part))
      tp.enter_backward(dx, dx_full, std::size_t(tp.local_rows(N)) * in);
  }
};

template <class T>
struct RowParallelLinear {
  int in = 0;   // this rank's input features
  int out = 0;  // output features (all of them)

  // x: (N, in); y_partial: (N, out) scratch; y: (n, out) = reduced product + b (b null: none).
  void forward(const TensorParallel& tp, T* y, T* y_partial, const T* x, const T* w, const T* b,
               int N) const {
    const int n = tp.local_rows(N);
    nn::linear_forward(y_partial, x, w, static_cast<const T*>(nullptr), N, in, out);
    tp.exit(y, y_partial, std::size_t(n) * out);
    if (b) MatMap<T>(y, n, out).rowwise() += CRowMap<T>(b, out);  // bias after the reduction
  }
  // dy: (n, out); dy_full: (N, out) buffer used under SP; dx: (N, in). dw, db accumulate (db
  // from this rank's rows: a partial sum over TP ranks under SP; null: no bias). part: the input
  // half gathers dy into dy_full (SP); the weight half reads it there, so dy_full must be kept
  // until then.
  void backward(const TensorParallel& tp, T* dx, T* dw, T* db, const T* dy, T* dy_full, const T* x,
                const T* w, int N, nn::BackwardPart part = nn::BackwardPart::both) const {
    const int n = tp.local_rows(N);
    if (db && nn::computes_weights(part))
      RowMap<T>(db, out) += CMatMap<T>(dy, n, out).colwise().sum();
    const T* d = !nn::computes_input(part) ? (tp.sequence_parallel ? dy_full : dy)
                                           : tp.exit_backward(dy, dy_full, std::size_t(n) * out);
    nn::linear_backward(dx, dw, static_cast<T*>(nullptr), d, x, w, N, in, out, part);
  }
};

// The column-parallel output gathered along features: full (N, t * out) from each rank's
// local (N, out). Collective over TP. (Megatron's gather_output option.)
template <class T>
void gather_columns(const TensorParallel& tp, T* full, const T* local, int N, int out) {
  const int t = tp.size();
  std::vector<T> blocks(std::size_t(N) * out * t);
  tp.comm->all_gather(Span<const T>(local, std::size_t(N) * out), Span<T>(blocks));
  for (int r = 0; r < t; ++r)
    for (int i = 0; i < N; ++i)
      std::copy_n(&blocks[(std::size_t(r) * N + i) * out], out,
                  full + std::size_t(i) * out * t + r * out);
}

}  // namespace trident
