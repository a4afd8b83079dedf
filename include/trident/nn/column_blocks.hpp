// trident/nn/column_blocks.hpp: how nn/ sums over rows into per-column accumulators in parallel.
//
// Gradients of biases, LayerNorm gains and embedding tables are sums over rows (tokens). Rather
// than atomics or per-thread copies, each OpenMP thread owns whole blocks of columns and walks
// all rows for them: no races, and the summation order (hence the result) does not depend on
// the number of threads. A block is a few cache lines wide so that rows are read contiguously.
#pragma once

#include <algorithm>

namespace trident::nn {

inline constexpr int kColumnBlock = 64;

// Calls body(c0, c1) for the column ranges [c0, c1) that tile [0, C), in parallel.
template <class Body>
void for_column_blocks(int C, const Body& body) {
#pragma omp parallel for schedule(static)
  for (int c0 = 0; c0 < C; c0 += kColumnBlock) body(c0, std::min(C, c0 + kColumnBlock));
}

}  // namespace trident::nn
