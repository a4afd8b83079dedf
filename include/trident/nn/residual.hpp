// trident/nn/residual.hpp: the residual sum of a pre-norm block (He et al. 2016), on a backend.
//
// A block's output is x + sublayer(x): the row-parallel layer's output y plus its bias (added
// here, after the TP reduction) plus the residual stream x. residual_row is the body's row, also
// called by the norms' fused forms (layernorm.hpp, rmsnorm.hpp), which normalise each sum in the
// same pass, while the row is in L1.
#pragma once

#include <cstddef>

#include "../backend/cpu/cpu.hpp"
#include "../backend/host_device.hpp"

namespace trident::nn {

// One row: sum = x + (y + bias), bias (C) or nullptr. sum may alias x or y.
template <class T>
TRIDENT_HOST_DEVICE inline void residual_row(T* sum, const T* x, const T* y, const T* bias, int C) {
  if (bias) {
    TRIDENT_SIMD
    for (int c = 0; c < C; ++c) sum[c] = x[c] + (y[c] + bias[c]);
  } else {
    TRIDENT_SIMD
    for (int c = 0; c < C; ++c) sum[c] = x[c] + y[c];
  }
}

namespace residual_detail {
template <class T>
struct ResidualRows {
  T* sum;
  const T* x;
  const T* y;
  const T* bias;
  int C;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    const std::ptrdiff_t at = std::ptrdiff_t(i) * C;
    residual_row(sum + at, x + at, y + at, bias, C);
  }
};
}  // namespace residual_detail

// x, y: (N, C), bias: (C) or nullptr -> sum: (N, C) = x + (y + bias): the block's output.
template <class Bk = backend::Cpu, class T>
void residual_forward(T* sum, const T* x, const T* y, const T* bias, int N, int C) {
  Bk::for_each(N, residual_detail::ResidualRows<T>{sum, x, y, bias, C});
}

}  // namespace trident::nn
