// trident/nn/layernorm.hpp: layer normalisation over the features of each row.
//
// out = (x - mean) / sqrt(var + eps) * weight + bias, per row (Ba, Kiros & Hinton, "Layer
// Normalization", 2016), with eps = 1e-5 and the biased variance, as GPT-2. The forward keeps
// each row's mean and 1/sqrt(var + eps) ("rstd") for the backward. Rows are Eigen arrays
// (vectorized.hpp), so that the sums over a row run in SIMD registers.
#pragma once

#include <cmath>
#include <cstddef>

#include <trident/nn/backward_part.hpp>
#include <trident/nn/column_blocks.hpp>
#include <trident/nn/vectorized.hpp>

namespace trident::nn {

inline constexpr double kLayerNormEps = 1e-5;

// x: (N, C), weight, bias: (C) -> out: (N, C), mean, rstd: (N)
template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* x, const T* weight, const T* bias, int N,
                       int C) {
#pragma omp parallel for
  for (int i = 0; i < N; ++i) {
    const CArrayMap<T> xi(x + static_cast<std::ptrdiff_t>(i) * C, C);
    const T m = xi.sum() / T(C);
    const T var = (xi - m).square().sum() / T(C);
    const T s = T(1) / std::sqrt(var + T(kLayerNormEps));
    ArrayMap<T>(out + static_cast<std::ptrdiff_t>(i) * C, C) =
        (xi - m) * s * CArrayMap<T>(weight, C) + CArrayMap<T>(bias, C);
    mean[i] = m;
    rstd[i] = s;
  }
}

// dout, x: (N, C), weight: (C), mean, rstd: (N)
// -> dx: (N, C) overwritten; dweight, dbias: (C) +=
// With n = (x - mean) rstd and g = dout * weight (per row):
//   dx = rstd (g - mean(g) - n mean(g n)),  dweight += sum_rows dout n,  dbias += sum_rows dout.
// part: input (dx only), weight (dweight, dbias only; weight unused) or both.
template <class T>
void layernorm_backward(T* dx, T* dweight, T* dbias, const T* dout, const T* x, const T* weight,
                        const T* mean, const T* rstd, int N, int C,
                        BackwardPart part = BackwardPart::both) {
  if (computes_input(part)) {
#pragma omp parallel for
    for (int i = 0; i < N; ++i) {
      const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(i) * C;
      const CArrayMap<T> w(weight, C);
      const auto n = (CArrayMap<T>(x + row, C) - mean[i]) * rstd[i];
      const auto g = CArrayMap<T>(dout + row, C) * w;
      const T g_mean = g.sum() / T(C), gn_mean = (g * n).sum() / T(C);
      ArrayMap<T>(dx + row, C) = rstd[i] * (g - g_mean - n * gn_mean);
    }
  }
  if (!computes_weights(part)) return;
  for_column_blocks(C, [&](int c0, int c1) {
    for (int i = 0; i < N; ++i) {
      const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(i) * C;
      for (int c = c0; c < c1; ++c) {
        dweight[c] += dout[row + c] * (x[row + c] - mean[i]) * rstd[i];
        dbias[c] += dout[row + c];
      }
    }
  });
}

}  // namespace trident::nn
