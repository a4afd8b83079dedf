// trident/nn/gelu.hpp: the GELU activation in the tanh approximation used by GPT-2, on a backend.
//
// GELU(x) = x Phi(x) (Hendrycks & Gimpel, "Gaussian Error Linear Units", 2016), approximated as
// 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3). Since 0.5 (1 + tanh(u)) =
// sigmoid(2u), it is computed as x sigmoid(2u): one exp per element (backend/host_device.hpp's,
// which a SIMD loop vectorises), and the backward from the same s = sigmoid(2u):
// GELU'(x) = s + 2 x s (1 - s) du/dx. Elementwise bodies.
#pragma once

#include <cstddef>

#include "../backend/cpu/cpu.hpp"
#include "../backend/host_device.hpp"

namespace trident::nn {

namespace gelu_detail {
template <class T>
struct Terms {
  static constexpr T kSqrt2OverPi = T(0.79788456080286535587989211986876);
  static constexpr T kCubic = T(0.044715);
};
// x: (n) -> out: (n)
template <class T>
struct Forward {
  T* out;
  const T* x;
  TRIDENT_HOST_DEVICE void operator()(backend::Index i) const {
    using G = Terms<T>;
    const T v = x[i];
    out[i] = v * backend::math::sigmoid(T(2) * G::kSqrt2OverPi * (v + G::kCubic * v * v * v));
  }
};
// dout, x: (n) -> dx: (n) = dout * GELU'(x); dx may alias dout
template <class T>
struct Backward {
  T* dx;
  const T* dout;
  const T* x;
  TRIDENT_HOST_DEVICE void operator()(backend::Index i) const {
    using G = Terms<T>;
    const T v = x[i];
    const T s = backend::math::sigmoid(T(2) * G::kSqrt2OverPi * (v + G::kCubic * v * v * v));
    const T du = G::kSqrt2OverPi * (T(1) + T(3) * G::kCubic * v * v);  // du/dx
    dx[i] = dout[i] * (s + T(2) * v * s * (T(1) - s) * du);
  }
};
}  // namespace gelu_detail

// x: (n) -> out: (n)
template <class Bk = backend::Cpu, class T>
void gelu_forward(T* out, const T* x, std::size_t n) {
  Bk::elementwise(backend::Index(n), gelu_detail::Forward<T>{out, x});
}

// dout, x: (n) -> dx: (n) = dout * GELU'(x), overwritten; dx may alias dout.
template <class Bk = backend::Cpu, class T>
void gelu_backward(T* dx, const T* dout, const T* x, std::size_t n) {
  Bk::elementwise(backend::Index(n), gelu_detail::Backward<T>{dx, dout, x});
}

}  // namespace trident::nn
