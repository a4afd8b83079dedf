// trident/models/llama/qkv.hpp: the query, key and value projections of grouped-query attention
// as one column-parallel layer over three weights (Megatron-LM §3's ColumnParallelLinear,
// tp/linear.hpp): one f (or, under sequence parallelism, one all-gather) for all three, and the
// products written straight into the packed [q | k | v] rows that nn/attention.hpp reads.
// With KV < H heads the sections differ in width, so the weights stay three tensors (each
// Shard(1) over TP) and each product is a strided view of the packed output (backend/gemm.hpp).
#pragma once

#include <array>

#include "../../backend/cpu/gemm.hpp"
#include "../../nn/backward_part.hpp"
#include "../../tp/tensor_parallel.hpp"

namespace trident::llama {

template <class T>
struct QkvProjection {
  int in = 0;  // input features C (all of them)
  int q = 0;   // this rank's query columns: H / TP heads of D
  int kv = 0;  // this rank's key (and value) columns: KV / TP heads of D
  int width() const { return q + 2 * kv; }

  // x: (n, C); x_full: (N, C) buffer used under SP; w: {Wq (C, q), Wk (C, kv), Wv (C, kv)}
  // -> qkv: (N, q + 2 kv) = [x Wq | x Wk | x Wv]. Returns the (N, C) input the products used.
  const T* forward(const TensorParallel& tp, T* qkv, const T* x, T* x_full,
                   const std::array<const T*, 3>& w, int N) const {
    const T* used = tp.f_forward(x, x_full, N, in);
    for (int s = 0, at = 0; s < 3; at += columns(s), ++s)
      backend::gemm(backend::view(qkv + at, N, columns(s), width()), backend::cview(used, N, in),
                    backend::cview(w[s], in, columns(s)), false, false, T(0));
    return used;
  }
  // dqkv: (N, q + 2 kv); dx_full: (N, C) scratch; dx: (n, C), may be dx_full without SP.
  // dw accumulate. part: the input half writes dx (f's all-reduce, or SP's reduce-scatter);
  // the weight half needs no communication.
  void backward(const TensorParallel& tp, T* dx, T* dx_full, const std::array<T*, 3>& dw,
                const T* dqkv, const T* x_used, const std::array<const T*, 3>& w, int N,
                nn::BackwardPart part = nn::BackwardPart::both) const {
    for (int s = 0, at = 0; s < 3; at += columns(s), ++s) {
      const auto dy = backend::cview(dqkv + at, N, columns(s), width());
      if (nn::computes_input(part))  // dx = sum over the sections of dy W^T
        backend::gemm(backend::view(dx_full, N, in), dy, backend::cview(w[s], in, columns(s)),
                      false, true, T(s == 0 ? 0 : 1));
      if (nn::computes_weights(part))
        backend::gemm(backend::view(dw[s], in, columns(s)), backend::cview(x_used, N, in), dy, true,
                      false, T(1));
    }
    if (nn::computes_input(part)) tp.f_backward(dx, dx_full, N, in);
  }

 private:
  int columns(int section) const { return section == 0 ? q : kv; }
};

}  // namespace trident::llama
