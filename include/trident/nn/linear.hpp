// trident/nn/linear.hpp: the fully connected layer, out = x w + bias.
//
// The weight is stored (in, out) as GPT-2's Conv1D (Radford et al., 2019), so the forward is a
// plain x w with no transpose. Both products go through backend::gemm.
#pragma once

#include <algorithm>
#include <cstddef>

#include <trident/backend/cpu/gemm.hpp>
#include <trident/nn/backward_part.hpp>

namespace trident::nn {

// dout: (N, O) -> dbias: (O) += the column sums of dout. Row by row, vectorised along the row, no
// OpenMP (one pass over dout): the sum of each column runs in row order whatever the threads.
template <class T>
void bias_backward(T* dbias, const T* dout, int N, int O) {
  for (int i = 0; i < N; ++i) {
    const T* row = dout + static_cast<std::ptrdiff_t>(i) * O;
    for (int o = 0; o < O; ++o) dbias[o] += row[o];
  }
}

// x: (N, I), w: (I, O), bias: (O) or nullptr -> out: (N, O)
// The bias is written first and the product accumulated onto it (beta 1): one pass over out
// fewer than a product (which zeroes out first) followed by a bias pass.
template <class T>
void linear_forward(T* out, const T* x, const T* w, const T* bias, int N, int I, int O) {
  if (bias) {
#pragma omp parallel for
    for (int i = 0; i < N; ++i) std::copy_n(bias, O, out + static_cast<std::ptrdiff_t>(i) * O);
  }
  backend::gemm(backend::view(out, N, O), backend::cview(x, N, I), backend::cview(w, I, O), false,
                false, bias ? 1 : 0);
}

// dout: (N, O), x: (N, I), w: (I, O)
// -> dx: (N, I) = dout w^T, overwritten (nullptr: skipped)
//    dw: (I, O) += x^T dout;  dbias: (O) += column sums of dout (nullptr: skipped)
// part: input (dx only: Qi et al.'s B), weight (dw, dbias only: W; w unused) or both.
template <class T>
void linear_backward(T* dx, T* dw, T* dbias, const T* dout, const T* x, const T* w, int N, int I,
                     int O, BackwardPart part = BackwardPart::both) {
  if (dx && computes_input(part))
    backend::gemm(backend::view(dx, N, I), backend::cview(dout, N, O), backend::cview(w, I, O),
                  false, true, 0);
  if (!computes_weights(part)) return;
  backend::gemm(backend::view(dw, I, O), backend::cview(x, N, I), backend::cview(dout, N, O), true,
                false, 1);
  if (dbias) bias_backward(dbias, dout, N, O);
}

}  // namespace trident::nn
