// trident/nn/rmsnorm.hpp: root mean square layer normalisation over each row, on a backend.
//
// out = x / sqrt(mean(x^2) + eps) * weight, per row (Zhang & Sennrich, "Root Mean Square Layer
// Normalization", 2019): LayerNorm without the mean subtraction and the bias, as in Llama. The
// forward keeps each row's 1/sqrt(mean(x^2) + eps) ("rstd") for the backward. Row bodies for the
// forward and the input gradient, column bodies for the weight gradient (as layernorm.hpp).
#pragma once

#include <cstddef>

#include "../backend/cpu/cpu.hpp"
#include "../backend/host_device.hpp"
#include "backward_part.hpp"
#include "column_blocks.hpp"
#include "residual.hpp"

namespace trident::nn {

// One row: x, weight: (C) -> out: (C), rstd.
template <class T>
TRIDENT_HOST_DEVICE inline void rmsnorm_row(T* out, T& rstd, const T* x, const T* weight, int C,
                                            T eps) {
  T squares = 0;
  TRIDENT_SIMD_SUM(squares)
  for (int c = 0; c < C; ++c) squares += x[c] * x[c];
  const T s = T(1) / backend::math::sqrt(squares / T(C) + eps);
  TRIDENT_SIMD
  for (int c = 0; c < C; ++c) out[c] = x[c] * s * weight[c];
  rstd = s;
}

namespace rmsnorm_detail {
// Row i: sum = x + (y + y_bias) when `sum`, then out, rstd = the norm of sum (or x).
template <class T>
struct Forward {
  T* sum;
  T* out;
  T* rstd;
  const T* x;
  const T* y;
  const T* y_bias;
  const T* weight;
  int C;
  T eps;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    const std::ptrdiff_t at = std::ptrdiff_t(i) * C;
    const T* in = x + at;
    if (sum) residual_row(sum + at, in, y + at, y_bias, C), in = sum + at;
    rmsnorm_row(out + at, rstd[i], in, weight, C, eps);
  }
};
// dx = rstd (g - n mean(g n)) (+ dresidual), n = x rstd, g = dout * weight
template <class T>
struct BackwardInput {
  T* dx;
  const T* dout;
  const T* x;
  const T* weight;
  const T* rstd;
  const T* dresidual;
  int C;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    const int n = C;  // members in locals: see column_blocks.hpp
    const std::ptrdiff_t row = std::ptrdiff_t(i) * n;
    const T* dy = dout + row;
    const T* xi = x + row;
    const T* w = weight;
    const T s = rstd[i];
    T gn_sum = 0;
    TRIDENT_SIMD_SUM(gn_sum)
    for (int c = 0; c < n; ++c) gn_sum += dy[c] * w[c] * (xi[c] * s);
    const T gn_mean = gn_sum / T(n);
    T* d = dx + row;
    TRIDENT_SIMD
    for (int c = 0; c < n; ++c) d[c] = s * (dy[c] * w[c] - xi[c] * s * gn_mean);
    if (!dresidual) return;  // a loop of its own: a conditional load would be a gather
    const T* r = dresidual + row;
    TRIDENT_SIMD
    for (int c = 0; c < n; ++c) d[c] += r[c];
  }
};
// dweight[c] += sum_rows dout x rstd, for one block of columns
template <class T>
struct BackwardWeights {
  T* dweight;
  const T* dout;
  const T* x;
  const T* rstd;
  int N, C, width;
  TRIDENT_HOST_DEVICE void operator()(int block) const {
    const ColumnBlock b = column_block(block, width, C);
    const int rows = N, cols = C, begin = b.begin, end = b.end;
    T* dw = dweight;
    for (int i = 0; i < rows; ++i) {
      const std::ptrdiff_t row = std::ptrdiff_t(i) * cols;
      const T s = rstd[i];
      const T* dy = dout + row;
      const T* xi = x + row;
      TRIDENT_SIMD
      for (int c = begin; c < end; ++c) dw[c] += dy[c] * (xi[c] * s);
    }
  }
};
}  // namespace rmsnorm_detail

// x: (N, C), weight: (C) -> out: (N, C), rstd: (N). eps: e.g. 1e-5 (Llama 2) or 1e-6 (Llama 1).
template <class Bk = backend::Cpu, class T>
void rmsnorm_forward(T* out, T* rstd, const T* x, const T* weight, int N, int C, T eps) {
  Bk::for_each(N,
               rmsnorm_detail::Forward<T>{nullptr, out, rstd, x, nullptr, nullptr, weight, C, eps});
}

// The residual sum and the RMSNorm that reads it, in one pass (residual.hpp):
// x, y: (N, C), y_bias: (C) or nullptr -> sum: (N, C) = x + (y + y_bias);
// out, rstd: rmsnorm_forward of sum.
template <class Bk = backend::Cpu, class T>
void residual_rmsnorm_forward(T* sum, T* out, T* rstd, const T* x, const T* y, const T* y_bias,
                              const T* weight, int N, int C, T eps) {
  Bk::for_each(N, rmsnorm_detail::Forward<T>{sum, out, rstd, x, y, y_bias, weight, C, eps});
}

// dout, x: (N, C), weight: (C), rstd: (N) from the forward
// -> dx: (N, C) overwritten; dweight: (C) +=
// With n = x rstd and g = dout * weight (per row):
//   dx = rstd (g - n mean(g n)),  dweight += sum_rows dout n.
// dresidual: (N, C) or nullptr, added to dx (the residual path around the norm), same pass.
// part: input (dx only), weight (dweight only; weight unused) or both.
template <class Bk = backend::Cpu, class T>
void rmsnorm_backward(T* dx, T* dweight, const T* dout, const T* x, const T* weight, const T* rstd,
                      int N, int C, BackwardPart part = BackwardPart::both,
                      const T* dresidual = nullptr) {
  if (computes_input(part))
    Bk::for_each(N, rmsnorm_detail::BackwardInput<T>{dx, dout, x, weight, rstd, dresidual, C});
  if (computes_weights(part))
    Bk::for_each(
        column_blocks(C, Bk::column_width(C)),
        rmsnorm_detail::BackwardWeights<T>{dweight, dout, x, rstd, N, C, Bk::column_width(C)});
}

}  // namespace trident::nn
