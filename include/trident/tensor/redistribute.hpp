// trident/tensor/redistribute.hpp: moving a ShardedTensor between placements on one axis.
//
//   Shard     -> Replicate   all-gather
//   Partial   -> Replicate   all-reduce
//   Partial   -> Shard       reduce-scatter
//   Replicate -> Shard       scatter (each rank keeps its block: no communication needed)
//   Shard     -> Shard       via Replicate when the layouts differ
// Blocks of different sizes (uneven splits, chunks, padding) travel padded to the largest
// block, so every exchange is one equal-sized collective.
//
// The view form, redistribute(from, to, axis), writes into a buffer the caller holds. When
// every rank's block is one contiguous run of the row-major tensor (Megatron's activations
// split along the sequence: Shard(0) in equal blocks), it is the bare collective on the two
// buffers, with no packing: this is how tensor parallelism's f and g move activations
// (tp/tensor_parallel.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../core/comm.hpp"
#include "sharded_tensor.hpp"

namespace trident {

namespace detail {
template <class T>
struct identity {
  using type = T;
};
template <class T>
using identity_t = typename identity<T>::type;  // keeps T from being deduced from an argument

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
// Whether every rank's block is one equal, contiguous run of the row-major tensor, in rank
// order: Replicate, Partial, or Shard of the outer dimension split evenly (no chunks, padding).
inline bool contiguous_blocks(const ShardLayout& l) {
  const Placement& p = l.placement();
  if (!p.is_shard()) return true;
  const int d = l.dim2();
  const std::int64_t extent = d == 0 ? l.rows() : l.cols();
  return (d == 0 || l.rows() == 1) && p.chunks == 1 && l.padded_extent() == extent &&
         extent % l.ranks() == 0;
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
[[nodiscard]] ShardedTensor<T> reduce_scatter(const ShardedTensor<T>& t, Placement target,
                                              const Comm& axis, std::int64_t padded = 0) {
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
[[nodiscard]] ShardedTensor<T> scatter(const ShardedTensor<T>& t, Placement target,
                                       std::int64_t padded = 0) {
  require(t.layout().placement().kind == Placement::Kind::replicate, "scatter needs Replicate");
  return ShardedTensor<T>::from_global(t.local(),
                                       detail::with_placement(t.layout(), target, padded));
}

// Any placement -> `target`. Collective over `axis` unless no communication is needed.
template <class T>
[[nodiscard]] ShardedTensor<T> redistribute(const ShardedTensor<T>& t, Placement target,
                                            const Comm& axis, std::int64_t padded = 0) {
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

// The view form: `from` (this rank's block) into `to` (the same global tensor, another
// placement), written into to.data. Collective over `axis` unless no communication is needed.
// from and to may share a buffer only for Partial -> Replicate (an in-place all-reduce).
template <class T>
void redistribute(ShardedView<const detail::identity_t<T>> from, ShardedView<T> to,
                  const Comm& axis) {
  using K = Placement::Kind;
  const ShardLayout &a = from.layout, &b = to.layout;
  if (a.shape() != b.shape() || a.ranks() != axis.size() || b.ranks() != axis.size())
    fail("redistribute: from " + a.to_string() + " to " + b.to_string() + " on an axis of " +
         std::to_string(axis.size()) + " ranks");
  const Placement p = a.placement(), q = b.placement();
  const std::size_t n_from = a.local_numel(), n_to = b.local_numel();
  auto copy = [&](const T* src) {
    if (src != to.data) std::copy_n(src, n_to, to.data);
  };
  if (a == b) return copy(from.data);
  if (detail::contiguous_blocks(a) && detail::contiguous_blocks(b)) {
    if (p.kind == K::partial && q.kind == K::replicate) {  // all-reduce
      copy(from.data);
      return axis.all_reduce(Span<T>(to.data, n_to));
    }
    if (from.data == to.data)
      fail("redistribute: " + p.to_string() + " -> " + q.to_string() + " needs two buffers");
    if (p.kind == K::partial && q.is_shard())  // reduce-scatter
      return axis.reduce_scatter(Span<const T>(from.data, n_from), Span<T>(to.data, n_to));
    if (p.is_shard() && q.kind == K::replicate)  // all-gather
      return axis.all_gather(Span<const T>(from.data, n_from), Span<T>(to.data, n_to));
    if (p.kind == K::replicate && q.is_shard())  // keep this rank's block
      return copy(from.data + b.global_offset(0, 0, b.rank()));
  }
  ShardedTensor<T> t(a);  // any other pair: packed, through the owning form
  std::copy_n(from.data, n_from, t.local().data());
  const ShardedTensor<T> r = redistribute(t, q, axis, q.is_shard() ? b.padded_extent() : 0);
  copy(r.local().data());
}

}  // namespace trident
