// trident/nn/column_blocks.hpp: how nn/ sums over rows into per-column accumulators in parallel.
//
// Gradients of biases, norm gains and embedding tables are sums over rows (tokens). Rather than
// atomics or per-thread copies, each call of a column body owns a block of
// Bk::column_width(C) columns and walks all rows for them, in order: no races, and the
// summation order (hence the result) depends neither on the threads nor on the backend. On the
// CPU a block is a thread's share of a row (read contiguously, added in SIMD registers); on a
// GPU one column per thread.
//
// A body copies the members its SIMD loops read (sizes, pointers) into locals first: a loop that
// reads them through `this` has GCC 12 load its rows by gathers, several times slower (measured
// on LayerNorm's input gradient: 0.21 ms against 0.06).
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
// How many column blocks of `width` cover C columns.
inline int column_blocks(int C, int width) {
  return (C + width - 1) / width;
}

}  // namespace trident::nn
