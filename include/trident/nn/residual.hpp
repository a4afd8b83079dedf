// trident/nn/residual.hpp: the residual connection of a pre-LN block (He et al. 2016; GPT-2's
// x + sublayer(LN(x))), fused with what surrounds it.
//
// A sublayer's output y comes from a row-parallel product without its bias; the residual sum
// x + (y + bias) is formed one row at a time, and a norm that follows (layernorm.hpp,
// rmsnorm.hpp) normalises the row in the same pass while it is in L1: one pass over the
// residual stream instead of three (bias, sum, norm). Plain loops, no OpenMP: each row is a few
// hundred elements, cheaper than waking threads.
#pragma once

#include <cstddef>

#include <trident/nn/vectorized.hpp>

namespace trident::nn {

// One row: sum = x + (y + bias), bias (C) or nullptr. sum may alias x or y.
template <class T>
void residual_row(T* sum, const T* x, const T* y, const T* bias, int C) {
  if (bias)
    ArrayMap<T>(sum, C) = CArrayMap<T>(x, C) + (CArrayMap<T>(y, C) + CArrayMap<T>(bias, C));
  else
    ArrayMap<T>(sum, C) = CArrayMap<T>(x, C) + CArrayMap<T>(y, C);
}

// x, y: (N, C), bias: (C) or nullptr -> sum: (N, C). For each row i, after its sum:
// then(i, row) with the row's sum (e.g. a norm of it).
template <class T, class Then>
void residual_rows(T* sum, const T* x, const T* y, const T* bias, int N, int C, const Then& then) {
  for (int i = 0; i < N; ++i) {
    const std::ptrdiff_t at = static_cast<std::ptrdiff_t>(i) * C;
    residual_row(sum + at, x + at, y + at, bias, C);
    then(i, sum + at);
  }
}

// x, y: (N, C), bias: (C) or nullptr -> sum: (N, C) = x + (y + bias): the block's output.
template <class T>
void residual_forward(T* sum, const T* x, const T* y, const T* bias, int N, int C) {
  residual_rows(sum, x, y, bias, N, C, [](int, const T*) {});
}

}  // namespace trident::nn
