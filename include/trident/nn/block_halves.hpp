// trident/nn/block_halves.hpp: which halves of a decoder block to run.
//
// A pre-norm decoder block is two residual halves, x2 = x + attention(norm1(x)) and
// out = x2 + mlp(norm2(x2)). The residual stream between them, x2, has the shape of the block's
// input and output, so a pipeline stage boundary may fall there (model/model.hpp, StageSpec):
// the earlier stage runs the block's attention half and hands x2 on, the later one runs the MLP
// half from it. Both stages hold the block's parameters, tied (train/ties.hpp): each computes
// the gradients of its half's, and the trainer sums the two copies.
#pragma once

namespace trident::nn {

enum class BlockHalves { both, attention, mlp };

inline bool runs_attention(BlockHalves h) {
  return h != BlockHalves::mlp;
}
inline bool runs_mlp(BlockHalves h) {
  return h != BlockHalves::attention;
}

}  // namespace trident::nn
