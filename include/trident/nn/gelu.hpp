// trident/nn/gelu.hpp: the GELU activation in the tanh approximation used by GPT-2.
//
// GELU(x) = x Phi(x) (Hendrycks & Gimpel, "Gaussian Error Linear Units", 2016), approximated as
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
#pragma once

#include <cmath>
#include <cstddef>

namespace trident::nn {

namespace gelu_detail {
template <class T>
constexpr T kSqrt2OverPi = T(0.79788456080286535587989211986876);
template <class T>
constexpr T kCubic = T(0.044715);
}  // namespace gelu_detail

// x: (n) -> out: (n)
template <class T>
void gelu_forward(T* out, const T* x, std::size_t n) {
  using namespace gelu_detail;
#pragma omp parallel for
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i) {
    const T v = x[i];
    out[i] = T(0.5) * v * (T(1) + std::tanh(kSqrt2OverPi<T> * (v + kCubic<T> * v * v * v)));
  }
}

// dout, x: (n) -> dx: (n) = dout * GELU'(x), overwritten; dx may alias dout.
template <class T>
void gelu_backward(T* dx, const T* dout, const T* x, std::size_t n) {
  using namespace gelu_detail;
#pragma omp parallel for
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i) {
    const T v = x[i];
    const T t = std::tanh(kSqrt2OverPi<T> * (v + kCubic<T> * v * v * v));
    const T dt = kSqrt2OverPi<T> * (T(1) + T(3) * kCubic<T> * v * v);  // d(tanh argument)/dx
    dx[i] = dout[i] * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * dt);
  }
}

}  // namespace trident::nn
