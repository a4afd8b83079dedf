// trident/core/random.hpp: counter-based random numbers (the idea of Salmon et al. 2011,
// "Parallel random numbers: as easy as 1, 2, 3"), built from SplitMix64's finaliser.
//
// A value is a pure function of (key, counter): no generator state, so any rank computes the
// element it needs, in any order. Initial weights (nn/init.hpp) and synthetic tokens
// (data/tokens.hpp) are drawn this way (ARCHITECTURE §1).
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace trident {

inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline std::uint64_t hash_name(std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Uniform in (0, 1) from 53 random bits of (key, counter).
inline double uniform01(std::uint64_t key, std::uint64_t counter) {
  const std::uint64_t bits = mix64(key ^ mix64(counter)) >> 11;
  return (static_cast<double>(bits) + 0.5) * (1.0 / 9007199254740992.0);
}

// Standard normal of element `index` of stream (seed, name), by Box-Muller.
inline double normal_at(std::uint64_t seed, std::string_view name, std::uint64_t index) {
  const std::uint64_t key = mix64(seed ^ hash_name(name));
  const double u1 = uniform01(key, 2 * index), u2 = uniform01(key, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace trident
