// trident/nn/gelu.hpp: the GELU activation in the tanh approximation used by GPT-2.
//
// GELU(x) = x Phi(x) (Hendrycks & Gimpel, "Gaussian Error Linear Units", 2016), approximated as
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Evaluated as Eigen arrays (vectorized.hpp):
// a scalar std::tanh per element would cost more than the GEMMs around it.
#pragma once

#include <cstddef>

#include <trident/nn/vectorized.hpp>

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
  for_chunks(n, [&](std::ptrdiff_t a, std::ptrdiff_t e) {
    const CArrayMap<T> v(x + a, e - a);
    ArrayMap<T>(out + a, e - a) =
        T(0.5) * v * (T(1) + (kSqrt2OverPi<T> * (v + kCubic<T> * v.cube())).tanh());
  });
}

// dout, x: (n) -> dx: (n) = dout * GELU'(x), overwritten; dx may alias dout.
template <class T>
void gelu_backward(T* dx, const T* dout, const T* x, std::size_t n) {
  using namespace gelu_detail;
  for_chunks(n, [&](std::ptrdiff_t a, std::ptrdiff_t e) {
    const CArrayMap<T> v(x + a, e - a);
    const ChunkArray<T> t = (kSqrt2OverPi<T> * (v + kCubic<T> * v.cube())).tanh();
    const auto dt = kSqrt2OverPi<T> * (T(1) + T(3) * kCubic<T> * v.square());  // d(tanh arg)/dx
    ArrayMap<T>(dx + a, e - a) = CArrayMap<T>(dout + a, e - a) *
                                 (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t.square()) * dt);
  });
}

}  // namespace trident::nn
