// trident/nn/positions.hpp: TokenPositions, where a rank's tokens sit in their sequence.
//
// Without context parallelism a rank holds every position 0 .. seq-1 of its sequences. Under
// context parallelism (cp/context_parallel.hpp) it holds one or two contiguous chunks of each
// sequence: local position s < chunk is global position first + s, the rest second + (s - chunk).
// The position embedding (nn/embedding.hpp), RoPE (nn/rope.hpp) and ring attention's causal mask
// (cp/ring_attention.hpp) read positions through it.
#pragma once

#include "../backend/host_device.hpp"

namespace trident::nn {

struct TokenPositions {
  int chunk = 1 << 30;  // tokens in the first chunk (all of them: one chunk)
  int first = 0, second = 0;

  TRIDENT_HOST_DEVICE int operator()(int s) const {
    return s < chunk ? first + s : second + (s - chunk);
  }
};

}  // namespace trident::nn
