// trident/train/gradient_norm.hpp: this rank's share of the global gradient norm (ARCHITECTURE
// §2, step 5).
//
// Each element of the model is counted on exactly one rank: its DP shard's owner
// (zero/optimizer.hpp, add_shard_squares), TP rank 0 for a TP-replicated parameter, the first
// copy for a tie (train/ties.hpp). Every chunk's sums of squares are computed on the backend and
// cross to the host once (backend::SquareSums); the norm is the square root of their sum over
// the world.
#pragma once

#include <vector>

#include "../backend/ops.hpp"
#include "../zero/optimizer.hpp"
#include "ties.hpp"

namespace trident {

// The sum of squares of the gradients this rank counts, chunks[c] being its chunk c (its store()
// a UnitStore<T, S, B>), tp_rank its rank in the TP group.
template <class B, class S, class Chunks>
double counted_gradient_squares(Chunks& chunks, const std::vector<LocalTie>& ties, int tp_rank) {
  backend::SquareSums<B, S> sums;  // every chunk's ranges, one copy to the host
  for (int c = 0; c < static_cast<int>(chunks.size()); ++c)
    add_shard_squares(sums, chunks[c]->store(), [&](int u, const LocalParam& p) {
      if (p.tp_replicated() && tp_rank != 0) return false;
      return !tied_copy(ties, c, u);
    });
  double squares = 0;
  for (double x : sums.compute()) squares += x;
  return squares;
}

}  // namespace trident
