// trident/backend/kernels/rmsnorm.hpp: root mean square layer normalisation on a backend.
//
// out = x rstd * weight, rstd = 1/sqrt(mean(x^2) + eps) per row (Zhang & Sennrich, "Root Mean
// Square Layer Normalization", 2019), as nn/rmsnorm.hpp. Forward and dx: one row per call of the
// body; dweight: one column per call, summing its rows in order.
#pragma once

#include "../host_device.hpp"

namespace trident::backend::kernels {

// x: (N, C), weight: (C) -> out: (N, C), rstd: (N)
template <class T>
struct RmsNormForward {
  T* out;
  T* rstd;
  const T* x;
  const T* weight;
  int C;
  T eps;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    const T* xi = x + long(i) * C;
    T squares = 0;
    for (int c = 0; c < C; ++c) squares += xi[c] * xi[c];
    const T s = T(1) / math::sqrt(squares / T(C) + eps);
    T* oi = out + long(i) * C;
    for (int c = 0; c < C; ++c) oi[c] = xi[c] * s * weight[c];
    rstd[i] = s;
  }
};

// dx = rstd (g - n mean(g n)), n = x rstd, g = dout * weight; per row.
template <class T>
struct RmsNormBackwardInput {
  T* dx;
  const T* dout;
  const T* x;
  const T* weight;
  const T* rstd;
  int C;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    const long row = long(i) * C;
    T gn_sum = 0;
    for (int c = 0; c < C; ++c) gn_sum += dout[row + c] * weight[c] * (x[row + c] * rstd[i]);
    const T gn_mean = gn_sum / T(C);
    for (int c = 0; c < C; ++c)
      dx[row + c] = rstd[i] * (dout[row + c] * weight[c] - x[row + c] * rstd[i] * gn_mean);
  }
};

// dweight[c] += sum_rows dout x rstd; one column c per call.
template <class T>
struct RmsNormBackwardWeights {
  T* dweight;
  const T* dout;
  const T* x;
  const T* rstd;
  int N, C;
  TRIDENT_HOST_DEVICE void operator()(int c) const {
    T dw = dweight[c];
    for (int i = 0; i < N; ++i) {
      const long at = long(i) * C + c;
      dw += dout[at] * x[at] * rstd[i];
    }
    dweight[c] = dw;
  }
};

template <class B, class T>
void rmsnorm_forward(T* out, T* rstd, const T* x, const T* weight, int N, int C, T eps) {
  B::for_each(N, RmsNormForward<T>{out, rstd, x, weight, C, eps});
}
// dx: (N, C) overwritten; dweight: (C) +=
template <class B, class T>
void rmsnorm_backward(T* dx, T* dweight, const T* dout, const T* x, const T* weight, const T* rstd,
                      int N, int C) {
  B::for_each(N, RmsNormBackwardInput<T>{dx, dout, x, weight, rstd, C});
  B::for_each(C, RmsNormBackwardWeights<T>{dweight, dout, x, rstd, N, C});
}

}  // namespace trident::backend::kernels
