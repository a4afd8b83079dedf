// trident/models/llama/qkv.hpp: the query, key and value projections of grouped-query attention
// as one column-parallel layer over three weights (Megatron-LM §3's ColumnParallelLinear,
// tp/linear.hpp): one f (or, under sequence parallelism, one all-gather) for all three, and the
// products written straight into the packed [q | k | v] rows that nn/attention.hpp reads.
// With KV < H heads the sections differ in width, so the weights stay three tensors (each
// Shard(1) over TP) and each product is a strided view of the packed output (B::gemm's rows may
// lie apart: backend/cpu/gemm.hpp).
#pragma once

#include <array>

#include "../../backend/cpu/cpu.hpp"
#include "../../nn/backward_part.hpp"
#include "../../tp/tensor_parallel.hpp"

namespace trident::llama {

template <class T, class B = backend::Cpu>
struct QkvProjection {
  int in = 0;  // input features C (all of them)
  int q = 0;   // this rank's query columns: H / TP heads of D
  int kv = 0;  // this rank's key (and value) columns: KV / TP heads of D
  int width() const { return q + 2 * kv; }

  // x: (n, C); x_full: (N, C) buffer used under SP; w: {Wq (C, q), Wk (C, kv), Wv (C, kv)}
  // -> qkv: (N, q + 2 kv) = [x Wq | x Wk | x Wv]. Returns the (N, C) input the products used.
  const T* forward(const TensorParallel<B>& tp, T* qkv, const T* x, T* x_full,
                   const std::array<const T*, 3>& w, int N) const {
    const T* used = tp.f_forward(x, x_full, N, in);
    for (int s = 0, at = 0; s < 3; at += columns(s), ++s)
      B::gemm(false, false, N, columns(s), in, used, in, w[s], columns(s), T(0), qkv + at, width());
    return used;
  }
  // dqkv: (N, q + 2 kv); dx_full: (N, C) scratch; dx: (n, C), may be dx_full without SP.
  // dw accumulate. part: the input half writes dx (f's all-reduce, or SP's reduce-scatter);
  // the weight half needs no communication.
  void backward(const TensorParallel<B>& tp, T* dx, T* dx_full, const std::array<T*, 3>& dw,
                const T* dqkv, const T* x_used, const std::array<const T*, 3>& w, int N,
                nn::BackwardPart part = nn::BackwardPart::both) const {
    for (int s = 0, at = 0; s < 3; at += columns(s), ++s) {
      const T* dy = dqkv + at;       // (N, columns(s)), rows width() apart
      if (nn::computes_input(part))  // dx = sum over the sections of dy W^T
        B::gemm(false, true, N, in, columns(s), dy, width(), w[s], columns(s), T(s == 0 ? 0 : 1),
                dx_full, in);
      if (nn::computes_weights(part))
        B::gemm(true, false, in, columns(s), N, x_used, in, dy, width(), T(1), dw[s], columns(s));
    }
    if (nn::computes_input(part)) tp.f_backward(dx, dx_full, N, in);
  }

 private:
  int columns(int section) const { return section == 0 ? q : kv; }
};

}  // namespace trident::llama
