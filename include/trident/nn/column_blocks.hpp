// trident/nn/column_blocks.hpp: how nn/ sums over rows into per-column accumulators in parallel.
//
// Gradients of biases, norm gains and embedding tables are sums over rows (tokens). Rather than
// atomics or per-thread copies, each call of a column body owns a block of Bk::kColumnBlock
// columns and walks all rows for them, in order: no races, and the summation order (hence the
// result) depends neither on the threads nor on the backend. On the CPU a block is a few cache
// lines of a row (read contiguously, added in SIMD registers); on a GPU one column per thread.
#pragma once

#include "../backend/host_device.hpp"

namespace trident::nn {

// The columns [begin, end) of column block `block` of C columns, `width` a block.
struct ColumnBlock {
  int begin, end;
};
TRIDENT_HOST_DEVICE inline ColumnBlock column_block(int block, int width, int C) {
  const int begin = block * width;
  return {begin, begin + width < C ? begin + width : C};
}
// How many column blocks cover C columns on backend Bk.
template <class Bk>
int column_blocks(int C) {
  return (C + Bk::kColumnBlock - 1) / Bk::kColumnBlock;
}

}  // namespace trident::nn
