// trident/model/init.hpp: initialisation by global element index (ARCHITECTURE §3).
//
// A counter-based generator (the idea of Salmon et al. 2011, "Parallel random numbers: as easy
// as 1, 2, 3"): the value of element k of parameter `name` is a pure function of
// (seed, name, k), built from SplitMix64's finaliser. Any rank computes exactly its shard and
// every mesh starts from the same weights as the single-process reference.
//
// GPT-2's scheme (Radford et al. 2019, §2.3): weights normal(0, 0.02); the residual
// projections (attn.c_proj, mlp.c_proj) scaled by 1/sqrt(2 L); biases zero; LayerNorm gain one.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
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

enum class Init { normal, residual_normal, ones, zeros };

// The initial value of element `index` of a parameter.
inline double initial_value(Init init, std::uint64_t seed, std::string_view name,
                            std::uint64_t index, int layers) {
  switch (init) {
    case Init::normal:
      return 0.02 * normal_at(seed, name, index);
    case Init::residual_normal:
      return 0.02 / std::sqrt(2.0 * layers) * normal_at(seed, name, index);
    case Init::ones:
      return 1.0;
    default:
      return 0.0;
  }
}

}  // namespace trident
