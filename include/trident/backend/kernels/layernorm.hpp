// trident/backend/kernels/layernorm.hpp: layer normalisation on a backend.
//
// out = (x - mean) rstd * weight + bias per row, rstd = 1/sqrt(var + eps), the biased variance
// (Ba, Kiros & Hinton, "Layer Normalization", 2016), as nn/layernorm.hpp. The forward and dx
// are one row per call of the body; dweight and dbias one column per call (a column sums its
// rows in order: no atomics, the same sum as the CPU layer's).
#pragma once

#include "../host_device.hpp"

namespace trident::backend::kernels {

// x: (N, C), weight, bias: (C) -> out: (N, C), mean, rstd: (N)
template <class T>
struct LayerNormForward {
  T* out;
  T* mean;
  T* rstd;
  const T* x;
  const T* weight;
  const T* bias;
  int C;
  T eps;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    const T* xi = x + long(i) * C;
    T sum = 0;
    for (int c = 0; c < C; ++c) sum += xi[c];
    const T m = sum / T(C);
    T var = 0;
    for (int c = 0; c < C; ++c) var += (xi[c] - m) * (xi[c] - m);
    const T s = T(1) / math::sqrt(var / T(C) + eps);
    T* oi = out + long(i) * C;
    for (int c = 0; c < C; ++c) oi[c] = (xi[c] - m) * s * weight[c] + bias[c];
    mean[i] = m;
    rstd[i] = s;
  }
};

// dx = rstd (g - mean(g) - n mean(g n)), n = (x - mean) rstd, g = dout * weight; per row.
template <class T>
struct LayerNormBackwardInput {
  T* dx;
  const T* dout;
  const T* x;
  const T* weight;
  const T* mean;
  const T* rstd;
  int C;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    const long row = long(i) * C;
    T g_sum = 0, gn_sum = 0;
    for (int c = 0; c < C; ++c) {
      const T g = dout[row + c] * weight[c], n = (x[row + c] - mean[i]) * rstd[i];
      g_sum += g;
      gn_sum += g * n;
    }
    const T g_mean = g_sum / T(C), gn_mean = gn_sum / T(C);
    for (int c = 0; c < C; ++c) {
      const T g = dout[row + c] * weight[c], n = (x[row + c] - mean[i]) * rstd[i];
      dx[row + c] = rstd[i] * (g - g_mean - n * gn_mean);
    }
  }
};

// dweight[c] += sum_rows dout n, dbias[c] += sum_rows dout; one column c per call.
template <class T>
struct LayerNormBackwardWeights {
  T* dweight;
  T* dbias;
  const T* dout;
  const T* x;
  const T* mean;
  const T* rstd;
  int N, C;
  TRIDENT_HOST_DEVICE void operator()(int c) const {
    T dw = dweight[c], db = dbias[c];
    for (int i = 0; i < N; ++i) {
      const long at = long(i) * C + c;
      dw += dout[at] * (x[at] - mean[i]) * rstd[i];
      db += dout[at];
    }
    dweight[c] = dw;
    dbias[c] = db;
  }
};

template <class B, class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* x, const T* weight, const T* bias, int N,
                       int C, T eps = T(1e-5)) {
  B::for_each(N, LayerNormForward<T>{out, mean, rstd, x, weight, bias, C, eps});
}
// dx: (N, C) overwritten; dweight, dbias: (C) +=
template <class B, class T>
void layernorm_backward(T* dx, T* dweight, T* dbias, const T* dout, const T* x, const T* weight,
                        const T* mean, const T* rstd, int N, int C) {
  B::for_each(N, LayerNormBackwardInput<T>{dx, dout, x, weight, mean, rstd, C});
  B::for_each(C, LayerNormBackwardWeights<T>{dweight, dbias, dout, x, mean, rstd, N, C});
}

}  // namespace trident::backend::kernels
