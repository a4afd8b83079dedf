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
// Two forms of each call: on raw buffers in backend Bk's memory (the kernels; a stage's hot
// path), and, on the CPU, on sharded tensors (tensor/sharded_tensor.hpp: ShardedTensor, or a
// ShardedView over a buffer; host memory), whose layouts are checked: a wrong placement or shape
// throws Error naming the expected and the given layout. Placements over TP, with A =
// tp.activation_placement() (Replicate, or Shard(0) under SP):
//   ColumnParallelLinear  x (N, in) A;  w (in, t*out) Shard(1);  b (t*out) Shard(0)  -> Shard(1)
//   RowParallelLinear     x (N, t*in) Shard(1);  w (t*in, out) Shard(0);  b (out) Replicate -> A
//
// Sizes: N rows (tokens of the microbatch), n = tp.local_rows(N) rows in the
// sequence-parallel regions (N, or N/t with SP).
#pragma once

#include <algorithm>

#include "../core/matrix.hpp"
#include "../nn/linear.hpp"
#include "../tensor/redistribute.hpp"
#include "tensor_parallel.hpp"

namespace trident {

template <class T, class Bk = backend::Cpu>
struct ColumnParallelLinear {
  using TP = TensorParallel<Bk>;
  int in = 0;   // input features (all of them)
  int out = 0;  // this rank's output features

  // x: (n, in); x_full: (N, in) buffer used under SP; y: (N, out).
  // Returns the (N, in) input the product used (x, or x_full) — keep it for backward.
  const T* forward(const TP& tp, T* y, const T* x, T* x_full, const T* w, const T* b, int N) const {
    const T* used = tp.f_forward(x, x_full, N, in);
    nn::linear_forward<Bk>(y, used, w, b, N, in, out);
    return used;
  }
  // dy: (N, out); dx_full: (N, in) scratch; dx: (n, in), may be dx_full without SP.
  // dw, db accumulate. part (nn/backward_part.hpp): the weight half needs no communication.
  void backward(const TP& tp, T* dx, T* dx_full, T* dw, T* db, const T* dy, const T* x_used,
                const T* w, int N, nn::BackwardPart part = nn::BackwardPart::both) const {
    nn::linear_backward<Bk>(dx_full, dw, db, dy, x_used, w, N, in, out, part);
    if (nn::computes_input(part)) tp.f_backward(dx, dx_full, N, in);
  }

  // On sharded tensors (host memory: Bk is the CPU): y = x W + b, (N, t*out) Shard(1).
  ShardedTensor<T> forward(const TP& tp, ShardedView<const T> x, ShardedView<const T> w,
                           ShardedView<const T> b) const {
    const int N = check(tp, x, w, b, "b");
    ShardedTensor<T> y(tp.layout(N, std::int64_t(out) * tp.size(), Placement::Shard(1)));
    std::vector<T> x_full(tp.sequence_parallel ? std::size_t(N) * in : 0);
    forward(tp, y.local().data(), x.data, x_full.data(), w.data, b.data, N);
    return y;
  }
  // dy: y's layout; dw, db (w's, b's layouts) accumulate. Returns dx in x's layout. Under SP x
  // is gathered again, as Megatron-LM does, rather than kept whole from forward.
  ShardedTensor<T> backward(const TP& tp, ShardedView<const T> dy, ShardedView<const T> x,
                            ShardedView<const T> w, ShardedView<T> dw, ShardedView<T> db) const {
    const int N = check(tp, x, w, db, "db");
    expect_layout("ColumnParallelLinear dy", dy.layout,
                  tp.layout(N, std::int64_t(out) * tp.size(), Placement::Shard(1)));
    expect_layout("ColumnParallelLinear dw", dw.layout, w.layout);
    std::vector<T> x_full(tp.sequence_parallel ? std::size_t(N) * in : 0), dx_full;
    const T* used = tp.f_forward(x.data, x_full.data(), N, in);
    ShardedTensor<T> dx(x.layout);
    if (tp.sequence_parallel) dx_full.resize(std::size_t(N) * in);
    T* full = tp.sequence_parallel ? dx_full.data() : dx.local().data();
    backward(tp, dx.local().data(), full, dw.data, db.data, dy.data, used, w.data, N);
    return dx;
  }

 private:
  // Checks x, w and the bias (named `bias`: b or db); returns N.
  int check(const TP& tp, const ShardedView<const T>& x, const ShardedView<const T>& w,
            const ShardedView<const T>& b, const char* bias) const {
    const std::int64_t N = x.layout.rows(), O = std::int64_t(out) * tp.size();
    expect_layout("ColumnParallelLinear x", x.layout, tp.layout(N, in, tp.activation_placement()));
    expect_layout("ColumnParallelLinear w", w.layout, tp.layout(in, O, Placement::Shard(1)));
    expect_layout(std::string("ColumnParallelLinear ") + bias, b.layout,
                  tp.layout(O, 0, Placement::Shard(0)));
    return int(N);
  }
};

template <class T, class Bk = backend::Cpu>
struct RowParallelLinear {
  using TP = TensorParallel<Bk>;
  int in = 0;   // this rank's input features
  int out = 0;  // output features (all of them)

  // x: (N, in); y_partial: (N, out) scratch; y: (n, out) = reduced product + b (b null: none).
  void forward(const TP& tp, T* y, T* y_partial, const T* x, const T* w, const T* b, int N) const {
    const int n = tp.local_rows(N);
    nn::linear_forward<Bk>(y_partial, x, w, static_cast<const T*>(nullptr), N, in, out);
    tp.g_forward(y, y_partial, N, out);
    if (b) nn::add_bias<Bk>(y, b, n, out);  // bias after the reduction
  }
  // dy: (n, out); dy_full: (N, out) buffer used under SP; dx: (N, in). dw, db accumulate (db
  // from this rank's rows: a partial sum over TP ranks under SP; null: no bias). part: the input
  // half gathers dy into dy_full (SP); the weight half reads it there, so dy_full must be kept
  // until then.
  void backward(const TP& tp, T* dx, T* dw, T* db, const T* dy, T* dy_full, const T* x, const T* w,
                int N, nn::BackwardPart part = nn::BackwardPart::both) const {
    const int n = tp.local_rows(N);
    if (db && nn::computes_weights(part)) nn::bias_backward<Bk>(db, dy, n, out);
    const T* d = !nn::computes_input(part) ? (tp.sequence_parallel ? dy_full : dy)
                                           : tp.g_backward(dy, dy_full, N, out);
    nn::linear_backward<Bk>(dx, dw, static_cast<T*>(nullptr), d, x, w, N, in, out, part);
  }

  // On sharded tensors: y = g(x W) + b, (N, out) in the activations' placement.
  ShardedTensor<T> forward(const TP& tp, ShardedView<const T> x, ShardedView<const T> w,
                           ShardedView<const T> b) const {
    const int N = check(tp, x, w);
    expect_layout("RowParallelLinear b", b.layout, tp.layout(out, 0, Placement::Replicate()));
    ShardedTensor<T> y(tp.layout(N, out, tp.activation_placement()));
    std::vector<T> y_partial(std::size_t(N) * out);
    forward(tp, y.local().data(), y_partial.data(), x.data, w.data, b.data, N);
    return y;
  }
  // dy: y's layout; dw (w's layout) and db accumulate; db is (out) Replicate, or Partial under
  // SP (each rank adds its sequence shard's sum: redistribute to Replicate sums it). Returns dx
  // in x's layout.
  ShardedTensor<T> backward(const TP& tp, ShardedView<const T> dy, ShardedView<const T> x,
                            ShardedView<const T> w, ShardedView<T> dw, ShardedView<T> db) const {
    const int N = check(tp, x, w);
    expect_layout("RowParallelLinear dy", dy.layout, tp.layout(N, out, tp.activation_placement()));
    expect_layout("RowParallelLinear dw", dw.layout, w.layout);
    expect_layout(
        "RowParallelLinear db", db.layout,
        tp.layout(out, 0, tp.sequence_parallel ? Placement::Partial() : Placement::Replicate()));
    ShardedTensor<T> dx(x.layout);
    std::vector<T> dy_full(tp.sequence_parallel ? std::size_t(N) * out : 0);
    backward(tp, dx.local().data(), dw.data, db.data, dy.data, dy_full.data(), x.data, w.data, N);
    return dx;
  }

 private:
  int check(const TP& tp, const ShardedView<const T>& x, const ShardedView<const T>& w) const {
    const std::int64_t N = x.layout.rows(), I = std::int64_t(in) * tp.size();
    expect_layout("RowParallelLinear x", x.layout, tp.layout(N, I, Placement::Shard(1)));
    expect_layout("RowParallelLinear w", w.layout, tp.layout(I, out, Placement::Shard(0)));
    return int(N);
  }
};

// The column-parallel output gathered along features: full (N, t * out) from each rank's
// local (N, out). Collective over TP. (Megatron's gather_output option.)
template <class T>
void gather_columns(const TensorParallel<>& tp, T* full, const T* local, int N, int out) {
  redistribute<T>({local, tp.layout(N, std::int64_t(out) * tp.size(), Placement::Shard(1))},
                  {full, tp.layout(N, std::int64_t(out) * tp.size(), Placement::Replicate())},
                  *tp.comm);
}

}  // namespace trident
