// trident/backend/kernels/gelu.hpp: GELU (tanh approximation, as GPT-2) on a backend.
//
// GELU(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (Hendrycks & Gimpel, "Gaussian
// Error Linear Units", 2016): the same formula as nn/gelu.hpp, one element per call of the body.
#pragma once

#include <cstddef>

#include "../host_device.hpp"

namespace trident::backend::kernels {

template <class T>
struct GeluTerms {
  static constexpr T kSqrt2OverPi = T(0.79788456080286535587989211986876);
  static constexpr T kCubic = T(0.044715);
};

// x: (n) -> out: (n)
template <class T>
struct GeluForward {
  T* out;
  const T* x;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    using G = GeluTerms<T>;
    const T v = x[i];
    out[i] = T(0.5) * v * (T(1) + math::tanh(G::kSqrt2OverPi * (v + G::kCubic * v * v * v)));
  }
};

// dout, x: (n) -> dx: (n) = dout * GELU'(x); dx may alias dout.
template <class T>
struct GeluBackward {
  T* dx;
  const T* dout;
  const T* x;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    using G = GeluTerms<T>;
    const T v = x[i];
    const T t = math::tanh(G::kSqrt2OverPi * (v + G::kCubic * v * v * v));
    const T dt = G::kSqrt2OverPi * (T(1) + T(3) * G::kCubic * v * v);  // d(tanh arg)/dx
    dx[i] = dout[i] * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * dt);
  }
};

template <class B, class T>
void gelu_forward(T* out, const T* x, int n) {
  B::for_each(n, GeluForward<T>{out, x});
}
template <class B, class T>
void gelu_backward(T* dx, const T* dout, const T* x, int n) {
  B::for_each(n, GeluBackward<T>{dx, dout, x});
}

}  // namespace trident::backend::kernels
