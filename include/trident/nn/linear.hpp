// trident/nn/linear.hpp: the fully connected layer, out = x w + bias, on a backend Bk.
//
// The weight is stored (in, out) as GPT-2's Conv1D (Radford et al., 2019), so the forward is a
// plain x w with no transpose. Both products go through Bk::gemm (the BLAS on the CPU, cuBLAS on
// a GPU); the bias is a row body, its gradient a column body (column_blocks.hpp: rows summed in
// order).
#pragma once

#include <cstddef>

#include "../backend/cpu/cpu.hpp"
#include "../backend/host_device.hpp"
#include "backward_part.hpp"
#include "column_blocks.hpp"

namespace trident::nn {

namespace linear_detail {
// out row i <- bias: (O)
template <class T>
struct BiasRows {
  T* out;
  const T* bias;
  int O;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    const int n = O;  // members in locals: see column_blocks.hpp
    const T* b = bias;
    T* row = out + std::ptrdiff_t(i) * n;
    TRIDENT_SIMD
    for (int o = 0; o < n; ++o) row[o] = b[o];
  }
};
// out row i += bias: (O)
template <class T>
struct AddBiasRows {
  T* out;
  const T* bias;
  int O;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    const int n = O;
    const T* b = bias;
    T* row = out + std::ptrdiff_t(i) * n;
    TRIDENT_SIMD
    for (int o = 0; o < n; ++o) row[o] += b[o];
  }
};
// dbias[c] += sum over the N rows of dout[., c], for the columns of one block
template <class T>
struct BiasBackward {
  T* dbias;
  const T* dout;
  int N, O, width;
  TRIDENT_HOST_DEVICE void operator()(int block) const {
    const ColumnBlock b = column_block(block, width, O);
    const int rows = N, cols = O, begin = b.begin, end = b.end;
    T* db = dbias;
    for (int i = 0; i < rows; ++i) {
      const T* row = dout + std::ptrdiff_t(i) * cols;
      TRIDENT_SIMD
      for (int c = begin; c < end; ++c) db[c] += row[c];
    }
  }
};
}  // namespace linear_detail

// out: (N, O) += bias: (O) on every row.
template <class Bk = backend::Cpu, class T>
void add_bias(T* out, const T* bias, int N, int O) {
  Bk::for_each(N, linear_detail::AddBiasRows<T>{out, bias, O});
}

// dout: (N, O) -> dbias: (O) += the column sums of dout, each column's rows in order.
template <class Bk = backend::Cpu, class T>
void bias_backward(T* dbias, const T* dout, int N, int O) {
  const int width = Bk::column_width(O);
  Bk::for_each(column_blocks(O, width), linear_detail::BiasBackward<T>{dbias, dout, N, O, width});
}

// x: (N, I), w: (I, O), bias: (O) or nullptr -> out: (N, O)
// The bias is written first and the product accumulated onto it (beta 1): one pass over out
// fewer than a product (which zeroes out first) followed by a bias pass.
template <class Bk = backend::Cpu, class T>
void linear_forward(T* out, const T* x, const T* w, const T* bias, int N, int I, int O) {
  if (bias) Bk::for_each(N, linear_detail::BiasRows<T>{out, bias, O});
  Bk::gemm(false, false, N, O, I, x, I, w, O, T(bias ? 1 : 0), out, O);
}

// dout: (N, O), x: (N, I), w: (I, O)
// -> dx: (N, I) = dout w^T, overwritten (nullptr: skipped)
//    dw: (I, O) += x^T dout;  dbias: (O) += column sums of dout (nullptr: skipped)
// part: input (dx only: Qi et al.'s B), weight (dw, dbias only: W; w unused) or both.
template <class Bk = backend::Cpu, class T>
void linear_backward(T* dx, T* dw, T* dbias, const T* dout, const T* x, const T* w, int N, int I,
                     int O, BackwardPart part = BackwardPart::both) {
  if (dx && computes_input(part)) Bk::gemm(false, true, N, I, O, dout, O, w, O, T(0), dx, I);
  if (!computes_weights(part)) return;
  Bk::gemm(true, false, I, O, N, x, I, dout, O, T(1), dw, O);
  if (dbias) bias_backward<Bk>(dbias, dout, N, O);
}

}  // namespace trident::nn
