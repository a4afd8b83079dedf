// trident/tensor/redistribute.hpp: moving a ShardedTensor between placements on one axis.
//
//   Shard     -> Replicate   all-gather
//   Partial   -> Replicate   all-reduce
//   Partial   -> Shard       reduce-scatter
//   Replicate -> Shard       scatter (each rank keeps its block: no communication needed)
//   Shard     -> Shard       via Replicate when the layouts differ
// Blocks of different sizes (uneven splits, chunks, padding) travel padded to the largest
// block, so every exchange is one equal-sized collective.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../core/comm.hpp"
#include "sharded_tensor.hpp"

namespace trident {

namespace detail {
inline std::int64_t largest_block(const ShardLayout& l) {
  std::int64_t m = 0;
  for (int r = 0; r < l.ranks(); ++r) m = std::max(m, l.local_numel(r));
  return m;
}
// Visits (local index k, global offset g) of rank r's block, skipping padding.
template <class F>
void for_each_element(const ShardLayout& l, int r, F&& f) {
  const std::int64_t rows = l.local_extent(0, r), cols = l.local_extent(1, r);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::int64_t g = l.global_offset(i, j, r);
      if (g >= 0) f(i * cols + j, g);
    }
}
inline ShardLayout with_placement(const ShardLayout& l, Placement p, std::int64_t padded = 0) {
  return ShardLayout(l.shape(), p, l.ranks(), l.rank(), padded);
}
}  // namespace detail

// The whole tensor (rows, cols) on every rank, from its shards. Collective over `axis`.
template <class T>
[[nodiscard]] Matrix<T> all_gather(const ShardedTensor<T>& t, const Comm& axis) {
  const ShardLayout& l = t.layout();
  Matrix<T> full(l.rows(), l.cols());
  if (!l.placement().is_shard()) {
    require(l.placement().kind == Placement::Kind::replicate, "all_gather of a Partial tensor");
    return t.local();
  }
  const std::int64_t block = detail::largest_block(l);
  std::vector<T> mine(block, T(0)), all(block * axis.size());
  std::copy(t.local().data(), t.local().data() + t.local().size(), mine.begin());
  axis.all_gather<T>(mine, all);
  for (int r = 0; r < axis.size(); ++r)
    detail::for_each_element(
        l, r, [&](std::int64_t k, std::int64_t g) { full.data()[g] = all[r * block + k]; });
  return full;
}

// Partial -> Replicate: the sum over the axis. Collective.
template <class T>
[[nodiscard]] ShardedTensor<T> all_reduce(const ShardedTensor<T>& t, const Comm& axis) {
  require(t.layout().placement().kind == Placement::Kind::partial, "all_reduce needs Partial");
  ShardedTensor<T> out(detail::with_placement(t.layout(), Placement::Replicate()));
  out.local() = t.local();
  axis.all_reduce(Span<T>(out.local().data(), out.local().size()));
  return out;
}

// Partial -> Shard(target): each rank receives the sum of its block. Collective.
template <class T>
[[nodiscard]] ShardedTensor<T> reduce_scatter(const ShardedTensor<T>& t, Placement target, const Comm& axis,
                                std::int64_t padded = 0) {
  require(t.layout().placement().kind == Placement::Kind::partial && target.is_shard(),
          "reduce_scatter goes from Partial to Shard");
  ShardedTensor<T> out(detail::with_placement(t.layout(), target, padded));
  const ShardLayout& l = out.layout();
  const std::int64_t block = detail::largest_block(l);
  std::vector<T> send(block * axis.size(), T(0)), mine(block);
  for (int r = 0; r < axis.size(); ++r)
    detail::for_each_element(
        l, r, [&](std::int64_t k, std::int64_t g) { send[r * block + k] = t.local().data()[g]; });
  axis.reduce_scatter<T>(send, mine);
  std::copy(mine.begin(), mine.begin() + out.local().size(), out.local().data());
  return out;
}

// Replicate -> Shard(target): keep this rank's block. No communication.
template <class T>
[[nodiscard]] ShardedTensor<T> scatter(const ShardedTensor<T>& t, Placement target, std::int64_t padded = 0) {
  require(t.layout().placement().kind == Placement::Kind::replicate, "scatter needs Replicate");
  return ShardedTensor<T>::from_global(t.local(),
                                       detail::with_placement(t.layout(), target, padded));
}

// Any placement -> `target`. Collective over `axis` unless no communication is needed.
template <class T>
[[nodiscard]] ShardedTensor<T> redistribute(const ShardedTensor<T>& t, Placement target, const Comm& axis,
                              std::int64_t padded = 0) {
  using K = Placement::Kind;
  const K from = t.layout().placement().kind;
  if (from == K::partial) {
    if (target.kind == K::replicate) return all_reduce(t, axis);
    if (target.kind == K::shard) return reduce_scatter(t, target, axis, padded);
    return t;
  }
  if (target.kind == K::partial) fail("redistribute: nothing turns into Partial");
  ShardedTensor<T> full(detail::with_placement(t.layout(), Placement::Replicate()));
  full.local() = from == K::shard ? all_gather(t, axis) : t.local();
  return target.kind == K::replicate ? full : scatter(full, target, padded);
}

}  // namespace trident
