// trident/backend/kernels/bf16_cast.hpp: float <-> bf16 on a backend, one element per call.
//
// The rounding of core/bf16.hpp (round to nearest, ties to even; NaN stays NaN) on the bits, so
// that a device cast gives the bits the host's bf16(float) gives.
#pragma once

#include <cstdint>
#include <cstring>

#include "../../core/bf16.hpp"
#include "../host_device.hpp"

namespace trident::backend::kernels {

TRIDENT_HOST_DEVICE inline std::uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
TRIDENT_HOST_DEVICE inline float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

// in: (n) float -> out: (n) bf16
struct FloatToBf16 {
  bf16* out;
  const float* in;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    std::uint32_t u = float_bits(in[i]);
    if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep it a (quiet) NaN
      out[i].bits = static_cast<std::uint16_t>((u >> 16) | 0x40u);
      return;
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    out[i].bits = static_cast<std::uint16_t>(u >> 16);
  }
};

// in: (n) bf16 -> out: (n) float, exact
struct Bf16ToFloat {
  float* out;
  const bf16* in;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    out[i] = bits_float(static_cast<std::uint32_t>(in[i].bits) << 16);
  }
};

template <class B>
void to_bf16(bf16* out, const float* in, int n) {
  B::for_each(n, FloatToBf16{out, in});
}
template <class B>
void from_bf16(float* out, const bf16* in, int n) {
  B::for_each(n, Bf16ToFloat{out, in});
}

}  // namespace trident::backend::kernels
