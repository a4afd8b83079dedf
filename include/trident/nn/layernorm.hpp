// trident/nn/layernorm.hpp: layer normalisation over the features of each row, on a backend.
//
// out = (x - mean) / sqrt(var + eps) * weight + bias, per row (Ba, Kiros & Hinton, "Layer
// Normalization", 2016), with eps = 1e-5 and the biased variance, as GPT-2. The forward keeps
// each row's mean and 1/sqrt(var + eps) ("rstd") for the backward. The forward and the input
// gradient are row bodies (SIMD sums along the row); the weight gradients column bodies, each
// column's rows summed in order (column_blocks.hpp), the same sums on every backend.
#pragma once

#include <cstddef>

#include "../backend/cpu/cpu.hpp"
#include "../backend/host_device.hpp"
#include "backward_part.hpp"
#include "column_blocks.hpp"
#include "residual.hpp"

namespace trident::nn {

inline constexpr double kLayerNormEps = 1e-5;

// One row: x, weight, bias: (C) -> out: (C), mean, rstd.
template <class T>
TRIDENT_HOST_DEVICE inline void layernorm_row(T* out, T& mean, T& rstd, const T* x, const T* weight,
                                              const T* bias, int C) {
  T sum = 0;
  TRIDENT_SIMD_SUM(sum)
  for (int c = 0; c < C; ++c) sum += x[c];
  const T m = sum / T(C);
  T var = 0;
  TRIDENT_SIMD_SUM(var)
  for (int c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
  const T s = T(1) / backend::math::sqrt(var / T(C) + T(kLayerNormEps));
  TRIDENT_SIMD
  for (int c = 0; c < C; ++c) out[c] = (x[c] - m) * s * weight[c] + bias[c];
  mean = m;
  rstd = s;
}

namespace layernorm_detail {
// Row i: sum = x + (y + y_bias) when `residual`, then out, mean, rstd = the norm of sum (or x).
template <class T>
struct Forward {
  T* sum;
  T* out;
  T* mean;
  T* rstd;
  const T* x;
  const T* y;
  const T* y_bias;
  const T* weight;
  const T* bias;
  int C;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    const std::ptrdiff_t at = std::ptrdiff_t(i) * C;
    const T* in = x + at;
    if (sum) residual_row(sum + at, in, y + at, y_bias, C), in = sum + at;
    layernorm_row(out + at, mean[i], rstd[i], in, weight, bias, C);
  }
};
// dx = rstd (g - mean(g) - n mean(g n)) (+ dresidual), n = (x - mean) rstd, g = dout * weight
template <class T>
struct BackwardInput {
  T* dx;
  const T* dout;
  const T* x;
  const T* weight;
  const T* mean;
  const T* rstd;
  const T* dresidual;
  int C;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    // the members in locals: a SIMD loop that reads them through `this` loads its rows by
    // gathers (GCC 12), 4x slower
    const int n = C;
    const std::ptrdiff_t row = std::ptrdiff_t(i) * n;
    const T* dy = dout + row;
    const T* xi = x + row;
    const T* w = weight;
    const T m = mean[i], s = rstd[i];
    T g_sum = 0, gn_sum = 0;
    TRIDENT_SIMD_SUM(g_sum, gn_sum)
    for (int c = 0; c < n; ++c) {
      const T g = dy[c] * w[c];
      g_sum += g;
      gn_sum += g * ((xi[c] - m) * s);
    }
    const T g_mean = g_sum / T(n), gn_mean = gn_sum / T(n);
    T* d = dx + row;
    TRIDENT_SIMD
    for (int c = 0; c < n; ++c) d[c] = s * (dy[c] * w[c] - g_mean - (xi[c] - m) * s * gn_mean);
    if (!dresidual) return;  // a loop of its own: a conditional load would be a gather
    const T* r = dresidual + row;
    TRIDENT_SIMD
    for (int c = 0; c < n; ++c) d[c] += r[c];
  }
};
// dweight[c] += sum_rows dout n, dbias[c] += sum_rows dout, for one block of columns
template <class T>
struct BackwardWeights {
  T* dweight;
  T* dbias;
  const T* dout;
  const T* x;
  const T* mean;
  const T* rstd;
  int N, C, width;
  TRIDENT_HOST_DEVICE void operator()(int block) const {
    const ColumnBlock b = column_block(block, width, C);
    const int rows = N, cols = C, begin = b.begin, end = b.end;  // locals: see BackwardInput
    T* dw = dweight;
    T* db = dbias;
    for (int i = 0; i < rows; ++i) {
      const std::ptrdiff_t row = std::ptrdiff_t(i) * cols;
      const T m = mean[i], s = rstd[i];
      const T* dy = dout + row;
      const T* xi = x + row;
      TRIDENT_SIMD
      for (int c = begin; c < end; ++c) dw[c] += dy[c] * ((xi[c] - m) * s);
      if (!db) continue;
      TRIDENT_SIMD
      for (int c = begin; c < end; ++c) db[c] += dy[c];
    }
  }
};
}  // namespace layernorm_detail

// x: (N, C), weight, bias: (C) -> out: (N, C), mean, rstd: (N)
template <class Bk = backend::Cpu, class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* x, const T* weight, const T* bias, int N,
                       int C) {
  Bk::for_each(N, layernorm_detail::Forward<T>{nullptr, out, mean, rstd, x, nullptr, nullptr,
                                               weight, bias, C});
}

// The residual sum and the LayerNorm that reads it, in one pass (residual.hpp):
// x, y: (N, C), y_bias: (C) or nullptr -> sum: (N, C) = x + (y + y_bias);
// out, mean, rstd: layernorm_forward of sum.
template <class Bk = backend::Cpu, class T>
void residual_layernorm_forward(T* sum, T* out, T* mean, T* rstd, const T* x, const T* y,
                                const T* y_bias, const T* weight, const T* bias, int N, int C) {
  Bk::for_each(N,
               layernorm_detail::Forward<T>{sum, out, mean, rstd, x, y, y_bias, weight, bias, C});
}

// dout, x: (N, C), weight: (C), mean, rstd: (N)
// -> dx: (N, C) overwritten; dweight, dbias: (C) +=  (dbias may be null)
// With n = (x - mean) rstd and g = dout * weight (per row):
//   dx = rstd (g - mean(g) - n mean(g n)),  dweight += sum_rows dout n,  dbias += sum_rows dout.
// dresidual: (N, C) or nullptr, added to dx: the gradient of the residual path around the norm
// (x + sublayer(LN(x))), in the same pass.
// part: input (dx only), weight (dweight, dbias only; weight unused) or both.
template <class Bk = backend::Cpu, class T>
void layernorm_backward(T* dx, T* dweight, T* dbias, const T* dout, const T* x, const T* weight,
                        const T* mean, const T* rstd, int N, int C,
                        BackwardPart part = BackwardPart::both, const T* dresidual = nullptr) {
  if (computes_input(part))
    Bk::for_each(N,
                 layernorm_detail::BackwardInput<T>{dx, dout, x, weight, mean, rstd, dresidual, C});
  if (computes_weights(part))
    Bk::for_each(column_blocks(C, Bk::column_width(C)),
                 layernorm_detail::BackwardWeights<T>{dweight, dbias, dout, x, mean, rstd, N, C,
                                                      Bk::column_width(C)});
}

}  // namespace trident::nn
