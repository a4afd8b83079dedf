// trident/nn/init.hpp: initialisation by global element index (ARCHITECTURE §3).
//
// The value of element k of parameter `name` is a pure function of (seed, name, k), drawn from
// the counter-based generator of core/random.hpp. Any rank computes exactly its shard and every
// mesh starts from the same weights as the single-process reference.
//
// GPT-2's scheme (Radford et al. 2019, §2.3): weights normal(0, 0.02); the residual
// projections (attn.c_proj, mlp.c_proj) scaled by 1/sqrt(2 L); biases zero; LayerNorm gain one.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

#include "../core/random.hpp"

namespace trident {

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
