// trident/nn/rmsnorm.hpp: root mean square layer normalisation over the features of each row.
//
// out = x / sqrt(mean(x^2) + eps) * weight, per row (Zhang & Sennrich, "Root Mean Square Layer
// Normalization", 2019): LayerNorm without the mean subtraction and the bias, as in Llama. The
// forward keeps each row's 1/sqrt(mean(x^2) + eps) ("rstd") for the backward. Rows are Eigen
// arrays (vectorized.hpp), so that the sums over a row run in SIMD registers; one pass per row,
// rows in order, no OpenMP (as layernorm.hpp).
#pragma once

#include <cmath>
#include <cstddef>

#include <trident/nn/backward_part.hpp>
#include <trident/nn/residual.hpp>
#include <trident/nn/vectorized.hpp>

namespace trident::nn {

// One row: x, weight: (C) -> out: (C), rstd.
template <class T>
void rmsnorm_row(T* out, T& rstd, const T* x, const T* weight, int C, T eps) {
  const CArrayMap<T> xi(x, C);
  const T s = T(1) / std::sqrt(xi.square().sum() / T(C) + eps);
  ArrayMap<T>(out, C) = xi * s * CArrayMap<T>(weight, C);
  rstd = s;
}

// x: (N, C), weight: (C) -> out: (N, C), rstd: (N). eps: e.g. 1e-5 (Llama 2) or 1e-6 (Llama 1).
template <class T>
void rmsnorm_forward(T* out, T* rstd, const T* x, const T* weight, int N, int C, T eps) {
  for (int i = 0; i < N; ++i) {
    const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(i) * C;
    rmsnorm_row(out + row, rstd[i], x + row, weight, C, eps);
  }
}

// The residual sum and the RMSNorm that reads it, in one pass (residual.hpp):
// x, y: (N, C), y_bias: (C) or nullptr -> sum: (N, C) = x + (y + y_bias);
// out, rstd: rmsnorm_forward of sum.
template <class T>
void residual_rmsnorm_forward(T* sum, T* out, T* rstd, const T* x, const T* y, const T* y_bias,
                              const T* weight, int N, int C, T eps) {
  residual_rows(sum, x, y, y_bias, N, C, [&](int i, const T* row) {
    rmsnorm_row(out + static_cast<std::ptrdiff_t>(i) * C, rstd[i], row, weight, C, eps);
  });
}

// dout, x: (N, C), weight: (C), rstd: (N) from the forward
// -> dx: (N, C) overwritten; dweight: (C) +=
// With n = x rstd and g = dout * weight (per row):
//   dx = rstd (g - n mean(g n)),  dweight += sum_rows dout n.
// dresidual: (N, C) or nullptr, added to dx (the residual path around the norm), same pass.
// part: input (dx only), weight (dweight only; weight unused) or both.
template <class T>
void rmsnorm_backward(T* dx, T* dweight, const T* dout, const T* x, const T* weight, const T* rstd,
                      int N, int C, BackwardPart part = BackwardPart::both,
                      const T* dresidual = nullptr) {
  const bool in = computes_input(part), wt = computes_weights(part);
  for (int i = 0; i < N; ++i) {
    const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(i) * C;
    const CArrayMap<T> dy(dout + row, C);
    const auto n = CArrayMap<T>(x + row, C) * rstd[i];
    if (in) {
      const auto g = dy * CArrayMap<T>(weight, C);
      const T gn_mean = (g * n).sum() / T(C);
      const auto d = rstd[i] * (g - n * gn_mean);
      if (dresidual)
        ArrayMap<T>(dx + row, C) = CArrayMap<T>(dresidual + row, C) + d;
      else
        ArrayMap<T>(dx + row, C) = d;
    }
    if (wt) ArrayMap<T>(dweight, C) += dy * n;
  }
}

}  // namespace trident::nn
