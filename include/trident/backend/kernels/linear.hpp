// trident/backend/kernels/linear.hpp: a linear layer and the residual sum on a backend.
//
// As nn/linear.hpp (weights stored [in, out], as GPT-2's Conv1D): y = x W + b, the product
// through B::gemm, the bias one element per call; its backward dx = dy W^T, dW += x^T dy (GEMMs)
// and db += the column sums of dy, one column per call summing its rows in order (no atomics,
// the CPU layer's sum). The residual sum of a pre-LN block (He et al. 2016), out = a + b,
// one element per call.
#pragma once

#include "../host_device.hpp"

namespace trident::backend::kernels {

// a, b: (n) -> out: (n) = a + b; out may alias a or b. Element per call.
template <class T>
struct ResidualSum {
  T* out;
  const T* a;
  const T* b;
  TRIDENT_HOST_DEVICE void operator()(int k) const { out[k] = a[k] + b[k]; }
};

// dy: (N, C) -> db: (C) += sum over rows; column c per call
template <class T>
struct ColumnSums {
  T* db;
  const T* dy;
  int N, C;
  TRIDENT_HOST_DEVICE void operator()(int c) const {
    T sum = db[c];
    for (int i = 0; i < N; ++i) sum += dy[long(i) * C + c];
    db[c] = sum;
  }
};

// y: (N, C) += bias: (C); element per call
template <class T>
struct BiasAdd {
  T* y;
  const T* bias;
  int C;
  TRIDENT_HOST_DEVICE void operator()(int k) const { y[k] += bias[k % C]; }
};

// a, b: (N, C) -> out: (N, C) = a + b
template <class B, class T>
void residual_sum(T* out, const T* a, const T* b, int N, int C) {
  B::for_each(N * C, ResidualSum<T>{out, a, b});
}

// y: (N, C) += bias: (C)
template <class B, class T>
void bias_add(T* y, const T* bias, int N, int C) {
  B::for_each(N * C, BiasAdd<T>{y, bias, C});
}

// x: (N, in), w: (in, out), b: (out) or nullptr -> y: (N, out)
template <class B, class T>
void linear_forward(T* y, const T* x, const T* w, const T* b, int N, int in, int out) {
  B::gemm(false, false, N, out, in, x, in, w, out, T(0), y, out);
  if (b) B::for_each(N * out, BiasAdd<T>{y, b, out});
}
// dy: (N, out) -> dx: (N, in) overwritten (when non-null); dw: (in, out), db: (out) +=
template <class B, class T>
void linear_backward(T* dx, T* dw, T* db, const T* dy, const T* x, const T* w, int N, int in,
                     int out) {
  if (dx) B::gemm(false, true, N, in, out, dy, out, w, out, T(0), dx, in);
  B::gemm(true, false, in, out, N, x, in, dy, out, T(1), dw, out);
  if (db) B::for_each(out, ColumnSums<T>{db, dy, N, out});
}

}  // namespace trident::backend::kernels
