// trident/nn/layernorm.hpp: layer normalisation over the features of each row.
//
// out = (x - mean) / sqrt(var + eps) * weight + bias, per row (Ba, Kiros & Hinton, "Layer
// Normalization", 2016), with eps = 1e-5 and the biased variance, as GPT-2. The forward keeps
// each row's mean and 1/sqrt(var + eps) ("rstd") for the backward. Rows are Eigen arrays
// (vectorized.hpp), so that the sums over a row run in SIMD registers; one pass per row, rows
// in order, no OpenMP (a row is too little work to share), so that the weight gradients' sums
// over rows run in row order whatever the thread count.
#pragma once

#include <cmath>
#include <cstddef>

#include <trident/nn/backward_part.hpp>
#include <trident/nn/residual.hpp>
#include <trident/nn/vectorized.hpp>

namespace trident::nn {

inline constexpr double kLayerNormEps = 1e-5;

// One row: x, weight, bias: (C) -> out: (C), mean, rstd.
template <class T>
void layernorm_row(T* out, T& mean, T& rstd, const T* x, const T* weight, const T* bias, int C) {
  const CArrayMap<T> xi(x, C);
  const T m = xi.sum() / T(C);
  const T var = (xi - m).square().sum() / T(C);
  const T s = T(1) / std::sqrt(var + T(kLayerNormEps));
  ArrayMap<T>(out, C) = (xi - m) * s * CArrayMap<T>(weight, C) + CArrayMap<T>(bias, C);
  mean = m;
  rstd = s;
}

// x: (N, C), weight, bias: (C) -> out: (N, C), mean, rstd: (N)
template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* x, const T* weight, const T* bias, int N,
                       int C) {
  for (int i = 0; i < N; ++i) {
    const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(i) * C;
    layernorm_row(out + row, mean[i], rstd[i], x + row, weight, bias, C);
  }
}

// The residual sum and the LayerNorm that reads it, in one pass (residual.hpp):
// x, y: (N, C), y_bias: (C) or nullptr -> sum: (N, C) = x + (y + y_bias);
// out, mean, rstd: layernorm_forward of sum.
template <class T>
void residual_layernorm_forward(T* sum, T* out, T* mean, T* rstd, const T* x, const T* y,
                                const T* y_bias, const T* weight, const T* bias, int N, int C) {
  residual_rows(sum, x, y, y_bias, N, C, [&](int i, const T* row) {
    layernorm_row(out + static_cast<std::ptrdiff_t>(i) * C, mean[i], rstd[i], row, weight, bias, C);
  });
}

// dout, x: (N, C), weight: (C), mean, rstd: (N)
// -> dx: (N, C) overwritten; dweight, dbias: (C) +=
// With n = (x - mean) rstd and g = dout * weight (per row):
//   dx = rstd (g - mean(g) - n mean(g n)),  dweight += sum_rows dout n,  dbias += sum_rows dout.
// dresidual: (N, C) or nullptr, added to dx: the gradient of the residual path around the norm
// (x + sublayer(LN(x))), in the same pass.
// part: input (dx only), weight (dweight, dbias only; weight unused) or both.
template <class T>
void layernorm_backward(T* dx, T* dweight, T* dbias, const T* dout, const T* x, const T* weight,
                        const T* mean, const T* rstd, int N, int C,
                        BackwardPart part = BackwardPart::both, const T* dresidual = nullptr) {
  const bool in = computes_input(part), wt = computes_weights(part);
  for (int i = 0; i < N; ++i) {
    const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(i) * C;
    const CArrayMap<T> dy(dout + row, C);
    const auto n = (CArrayMap<T>(x + row, C) - mean[i]) * rstd[i];
    if (in) {
      const auto g = dy * CArrayMap<T>(weight, C);
      const T g_mean = g.sum() / T(C), gn_mean = (g * n).sum() / T(C);
      const auto d = rstd[i] * (g - g_mean - n * gn_mean);
      if (dresidual)
        ArrayMap<T>(dx + row, C) = CArrayMap<T>(dresidual + row, C) + d;
      else
        ArrayMap<T>(dx + row, C) = d;
    }
    if (wt) ArrayMap<T>(dweight, C) += dy * n, ArrayMap<T>(dbias, C) += dy;
  }
}

}  // namespace trident::nn
