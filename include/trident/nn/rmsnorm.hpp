// trident/nn/rmsnorm.hpp: root mean square layer normalisation over the features of each row.
//
// out = x / sqrt(mean(x^2) + eps) * weight, per row (Zhang & Sennrich, "Root Mean Square Layer
// Normalization", 2019): LayerNorm without the mean subtraction and the bias, as in Llama. The
// forward keeps each row's 1/sqrt(mean(x^2) + eps) ("rstd") for the backward. Rows are Eigen
// arrays (vectorized.hpp), so that the sums over a row run in SIMD registers.
#pragma once

#include <cmath>
#include <cstddef>

#include <trident/nn/backward_part.hpp>
#include <trident/nn/column_blocks.hpp>
#include <trident/nn/vectorized.hpp>

namespace trident::nn {

// x: (N, C), weight: (C) -> out: (N, C), rstd: (N). eps: e.g. 1e-5 (Llama 2) or 1e-6 (Llama 1).
template <class T>
void rmsnorm_forward(T* out, T* rstd, const T* x, const T* weight, int N, int C, T eps) {
#pragma omp parallel for
  for (int i = 0; i < N; ++i) {
    const CArrayMap<T> xi(x + static_cast<std::ptrdiff_t>(i) * C, C);
    const T s = T(1) / std::sqrt(xi.square().sum() / T(C) + eps);
    ArrayMap<T>(out + static_cast<std::ptrdiff_t>(i) * C, C) = xi * s * CArrayMap<T>(weight, C);
    rstd[i] = s;
  }
}

// dout, x: (N, C), weight: (C), rstd: (N) from the forward
// -> dx: (N, C) overwritten; dweight: (C) +=
// With n = x rstd and g = dout * weight (per row):
//   dx = rstd (g - n mean(g n)),  dweight += sum_rows dout n.
// part: input (dx only), weight (dweight only; weight unused) or both.
template <class T>
void rmsnorm_backward(T* dx, T* dweight, const T* dout, const T* x, const T* weight, const T* rstd,
                      int N, int C, BackwardPart part = BackwardPart::both) {
  if (computes_input(part)) {
#pragma omp parallel for
    for (int i = 0; i < N; ++i) {
      const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(i) * C;
      const auto n = CArrayMap<T>(x + row, C) * rstd[i];
      const auto g = CArrayMap<T>(dout + row, C) * CArrayMap<T>(weight, C);
      const T gn_mean = (g * n).sum() / T(C);
      ArrayMap<T>(dx + row, C) = rstd[i] * (g - n * gn_mean);
    }
  }
  if (!computes_weights(part)) return;
  for_column_blocks(C, [&](int c0, int c1) {
    for (int i = 0; i < N; ++i) {
      const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(i) * C;
      for (int c = c0; c < c1; ++c) dweight[c] += dout[row + c] * x[row + c] * rstd[i];
    }
  });
}

}  // namespace trident::nn
