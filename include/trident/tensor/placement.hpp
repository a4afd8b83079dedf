// trident/tensor/placement.hpp: how a tensor lies on one mesh axis, and this rank's block of it.
//
// Placement (as in PyTorch DTensor): Replicate (every rank holds all of it), Shard(dim) (each
// rank holds a slice of `dim`), Partial (each rank holds a summand; the tensor is their sum).
// Shard has two refinements that Megatron needs:
//  - chunks: the dimension is made of `chunks` equal sections, each split over the ranks
//    (Megatron's partition stride). The fused QKV weight [C, 3C] is Shard(1, chunks=3): each
//    rank holds its heads' columns of Q, of K and of V.
//  - padded extent: the dimension is padded to a multiple of the ranks before splitting (the
//    vocabulary, Megatron's make-vocab-size-divisible-by); padded indices hold zeros.
// Without padding a section that does not divide is split as evenly as possible: rank r gets
// n/R + (r < n%R) elements, starting at r*(n/R) + min(r, n%R).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../core/error.hpp"

namespace trident {

struct Placement {
  enum class Kind { replicate, shard, partial };
  Kind kind = Kind::replicate;
  int dim = 0;     // shard: the sharded dimension of the tensor's own shape
  int chunks = 1;  // shard: interleaved sections, each split over the ranks

  static Placement Replicate() { return {}; }
  static Placement Shard(int dim, int chunks = 1) { return {Kind::shard, dim, chunks}; }
  static Placement Partial() { return {Kind::partial, 0, 1}; }
  bool is_shard() const { return kind == Kind::shard; }
  bool operator==(const Placement& o) const {
    return kind == o.kind && (kind != Kind::shard || (dim == o.dim && chunks == o.chunks));
  }
  bool operator!=(const Placement& o) const { return !(*this == o); }
  std::string to_string() const {
    if (kind == Kind::replicate) return "Replicate";
    if (kind == Kind::partial) return "Partial(sum)";
    return "Shard(" + std::to_string(dim) +
           (chunks > 1 ? ", chunks=" + std::to_string(chunks) : "") + ")";
  }
};

// Balanced split of n elements over `parts`: the [begin, begin+size) of part p.
inline std::int64_t split_size(std::int64_t n, int parts, int p) {
  return n / parts + (p < n % parts ? 1 : 0);
}
inline std::int64_t split_begin(std::int64_t n, int parts, int p) {
  return p * (n / parts) + std::min<std::int64_t>(p, n % parts);
}

// The block of a global tensor (1 or 2 dimensions) held by `rank` of `ranks` under a placement.
class ShardLayout {
 public:
  ShardLayout() = default;
  // padded: extent of the sharded dimension after padding (0 = no padding).
  ShardLayout(std::vector<std::int64_t> shape, Placement placement, int ranks, int rank,
              std::int64_t padded = 0)
      : shape_(std::move(shape)), placement_(placement), ranks_(ranks), rank_(rank) {
    require(!shape_.empty() && shape_.size() <= 2, "ShardLayout: tensors have 1 or 2 dimensions");
    extent_ = placement_.is_shard() ? std::max(padded, shape_.at(placement_.dim)) : 0;
    if (placement_.is_shard())
      require(extent_ % placement_.chunks == 0,
              "ShardLayout: dimension of " + std::to_string(extent_) + " is not " +
                  std::to_string(placement_.chunks) + " equal sections");
  }

  const std::vector<std::int64_t>& shape() const { return shape_; }
  const Placement& placement() const { return placement_; }
  int ranks() const { return ranks_; }
  int rank() const { return rank_; }

  // Global shape as (rows, cols): a vector of n is (1, n).
  std::int64_t rows() const { return shape_.size() == 2 ? shape_[0] : 1; }
  std::int64_t cols() const { return shape_.back(); }
  std::int64_t numel() const { return rows() * cols(); }
  // The sharded dimension in (rows, cols) terms: 0 = rows, 1 = cols.
  int dim2() const { return shape_.size() == 2 ? placement_.dim : 1; }

  // This rank's block as (rows, cols), padding included.
  std::int64_t local_rows() const { return local_extent(0, rank_); }
  std::int64_t local_cols() const { return local_extent(1, rank_); }
  std::int64_t local_numel() const { return local_rows() * local_cols(); }
  std::vector<std::int64_t> local_shape() const {
    if (shape_.size() == 1) return {local_cols()};
    return {local_rows(), local_cols()};
  }

  // Global index along dimension d (0 rows, 1 cols) of local index i of rank r. An index
  // >= the global extent is padding.
  std::int64_t global_index(int d, std::int64_t i, int r) const {
    if (!placement_.is_shard() || d != dim2()) return i;
    const std::int64_t section = extent_ / placement_.chunks;
    const std::int64_t local_section = split_size(section, ranks_, r);
    const std::int64_t k = i / local_section, j = i % local_section;
    return k * section + split_begin(section, ranks_, r) + j;
  }
  std::int64_t global_index(int d, std::int64_t i) const { return global_index(d, i, rank_); }
  // Global row-major offset of local element (i, j), or -1 for padding.
  std::int64_t global_offset(std::int64_t i, std::int64_t j, int r) const {
    const std::int64_t gi = global_index(0, i, r), gj = global_index(1, j, r);
    if (gi >= rows() || gj >= cols()) return -1;
    return gi * cols() + gj;
  }
  std::int64_t local_extent(int d, int r) const {
    const std::int64_t full = d == 0 ? rows() : cols();
    if (!placement_.is_shard() || d != dim2()) return full;
    return placement_.chunks * split_size(extent_ / placement_.chunks, ranks_, r);
  }
  std::int64_t local_numel(int r) const { return local_extent(0, r) * local_extent(1, r); }
  // Offset of this rank's block in the sharded dimension (for chunks = 1).
  std::int64_t offset() const { return global_index(dim2(), 0); }
  // Extent of the sharded dimension after padding (0 when not sharded).
  std::int64_t padded_extent() const { return extent_; }

  // Same tensor, same split: shape, placement, ranks and padding.
  bool operator==(const ShardLayout& o) const {
    return shape_ == o.shape_ && placement_ == o.placement_ && ranks_ == o.ranks_ &&
           extent_ == o.extent_;
  }
  // e.g. "(8, 6) Shard(1) over 2 ranks", "(67, 6) Shard(0) padded to 68 over 4 ranks".
  std::string to_string() const {
    std::string s = "(";
    for (std::size_t d = 0; d < shape_.size(); ++d)
      s += (d ? ", " : "") + std::to_string(shape_[d]);
    s += ") " + placement_.to_string();
    if (placement_.is_shard() && extent_ != shape_.at(placement_.dim))
      s += " padded to " + std::to_string(extent_);
    return s + " over " + std::to_string(ranks_) + " ranks";
  }

 private:
  std::vector<std::int64_t> shape_;
  Placement placement_;
  int ranks_ = 1, rank_ = 0;
  std::int64_t extent_ = 0;
};

// Throws Error "<what>: expected <layout>, given <layout>" unless `given` is `expected`: how
// the tensor-parallel layers check the placements of their sharded tensors.
inline void expect_layout(const std::string& what, const ShardLayout& given,
                          const ShardLayout& expected) {
  if (!(given == expected))
    fail(what + ": expected " + expected.to_string() + ", given " + given.to_string());
}

}  // namespace trident
