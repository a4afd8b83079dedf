// trident/io/checkpoint_slices.hpp: the elements a rank holds of a global tensor, as boxes.
//
// A rank holds a contiguous range of its local block (row-major, padding included) — all of it,
// or its ZeRO shard of it. Through the tensor-parallel layout (tensor/placement.hpp) that range
// is a few boxes of the global tensor: at most three local rectangles (a partial first row, whole
// rows, a partial last row), each cut where the global index stops being consecutive (at the
// sections of a chunked shard, e.g. QKV's Q, K and V) and clipped of padding (vocab rows).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "../tensor/placement.hpp"

namespace trident::io {

// A box of a tensor seen as (rows, cols) — a vector of n is (1, n) — and where it starts in the
// rank's local block.
struct Box {
  std::int64_t row = 0, col = 0, rows = 0, cols = 0;  // in the global tensor
  std::int64_t local_row = 0, local_col = 0;          // in this rank's block
};

namespace detail {
struct Run {
  std::int64_t local, global, length;
};
// Local indices [lo, hi) of dimension d (0 rows, 1 cols) as runs of consecutive global indices,
// padding left out.
inline std::vector<Run> runs(const ShardLayout& l, int d, std::int64_t lo, std::int64_t hi) {
  const std::int64_t extent = d == 0 ? l.rows() : l.cols();
  std::vector<Run> out;
  for (std::int64_t i = lo; i < hi; ++i) {
    const std::int64_t g = l.global_index(d, i);
    if (g >= extent) continue;
    if (!out.empty() && out.back().local + out.back().length == i &&
        out.back().global + out.back().length == g)
      ++out.back().length;
    else
      out.push_back({i, g, 1});
  }
  return out;
}
}  // namespace detail

// The boxes of local elements [begin, end) of the block `layout` gives this rank.
inline std::vector<Box> boxes_of_range(const ShardLayout& layout, std::int64_t begin,
                                       std::int64_t end) {
  std::vector<Box> out;
  const std::int64_t cols = layout.local_cols();
  if (begin >= end || cols == 0) return out;
  std::vector<std::array<std::int64_t, 4>> rects;  // local rows [r0, r1) x cols [c0, c1)
  std::int64_t r0 = begin / cols, r1 = end / cols;
  const std::int64_t c0 = begin % cols, c1 = end % cols;
  if (r0 == r1) {
    rects.push_back({r0, r0 + 1, c0, c1});
  } else {
    if (c0 > 0) {
      rects.push_back({r0, r0 + 1, c0, cols});
      ++r0;
    }
    if (r0 < r1) rects.push_back({r0, r1, 0, cols});
    if (c1 > 0) rects.push_back({r1, r1 + 1, 0, c1});
  }
  for (const auto& r : rects)
    for (const detail::Run& i : detail::runs(layout, 0, r[0], r[1]))
      for (const detail::Run& j : detail::runs(layout, 1, r[2], r[3]))
        out.push_back({i.global, j.global, i.length, j.length, i.local, j.local});
  return out;
}

}  // namespace trident::io
