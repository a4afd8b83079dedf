// trident/core/bf16.hpp: bfloat16 storage (the top 16 bits of an IEEE float).
//
// Used for mixed-precision parameters and gradients (ZeRO paper §3: 2 + 2 + 12 bytes per
// parameter). Arithmetic happens in float; bf16 is only stored and communicated.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace trident {

struct bf16 {
  std::uint16_t bits = 0;

  bf16() = default;
  explicit bf16(float value) : bits(round(value)) {}
  explicit operator float() const {
    std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }

  // Round to nearest, ties to even; NaN stays NaN.
  static std::uint16_t round(float value) {
    std::uint32_t u;
    std::memcpy(&u, &value, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<std::uint16_t>(u >> 16);
  }
};

inline float to_float(bf16 x) {
  return static_cast<float>(x);
}
inline float to_float(float x) {
  return x;
}
inline double to_float(double x) {
  return x;
}

// Value conversion between float, double and bf16 (rounding to nearest for bf16).
template <class To, class From>
To convert_to(From x) {
  if constexpr (std::is_same_v<To, bf16>)
    return bf16(static_cast<float>(to_float(x)));
  else
    return static_cast<To>(to_float(x));
}

}  // namespace trident
