// trident/mesh/mesh.hpp: Mesh<TP,PP,DP>, one world of ranks seen as a 3D grid of groups.
//
// Rank order (Megatron-LM's): TP fastest, then DP, then PP:
//     rank = tp + TP * (dp + DP * pp)
// so a tensor-parallel group is TP neighbouring ranks, which fit inside one node, and pipeline
// stages are the slowest axis, the one that crosses nodes. For TP2-PP2-DP2:
//
//     rank  tp pp dp     tp group  pp group  dp group
//       0    0  0  0      {0,1}     {0,4}     {0,2}
//       1    1  0  0      {0,1}     {1,5}     {1,3}
//       2    0  0  1      {2,3}     {2,6}     {0,2}
//       3    1  0  1      {2,3}     {3,7}     {1,3}
//       4    0  1  0      {4,5}     {0,4}     {4,6}
//       5    1  1  0      {4,5}     {1,5}     {5,7}
//       6    0  1  1      {6,7}     {2,6}     {4,6}
//       7    1  1  1      {6,7}     {3,7}     {5,7}
//
// Mesh<2,2,2> fixes the sizes at compile time; Mesh<> takes them at run time. Both are a Mesh<>,
// which is what the rest of the library takes.
#pragma once

#include <string>

#include "../core/comm.hpp"
#include "../core/error.hpp"

namespace trident {

struct MeshShape {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int product() const { return tp * pp * dp; }
};

struct MeshCoord {
  int tp = 0;
  int pp = 0;
  int dp = 0;
};

inline constexpr int kDynamic = 0;

template <int TP = kDynamic, int PP = kDynamic, int DP = kDynamic>
class Mesh;

// The runtime mesh: shape, this rank's coordinates and its sub-communicators.
template <>
class Mesh<kDynamic, kDynamic, kDynamic> {
 public:
  // Collective over `world`. Throws Error (the same on every rank) when the shape does not
  // multiply to the world size or a size is below 1.
  Mesh(const Comm& world, MeshShape shape) : shape_(shape) {
    validate(shape, world.size());
    world_ = world.borrowed();
    const int r = world.rank();
    coord_ = {r % shape.tp, r / (shape.tp * shape.dp), (r / shape.tp) % shape.dp};
    const auto [t, p, d] = coord_;
    // color = the coordinates that stay fixed; key = the coordinate that varies
    tp_ = world.split(p * shape.dp + d, t, "tp");
    pp_ = world.split(d * shape.tp + t, p, "pp");
    dp_ = world.split(p * shape.tp + t, d, "dp");
    mp_ = world.split(d, p * shape.tp + t, "mp");  // tensor x pipeline: a model replica
    const bool tied = shape.pp > 1 && (p == 0 || p == shape.pp - 1);
    embedding_ = world.split(tied ? d * shape.tp + t : Comm::kUndefined, p, "emb");
  }

  static void validate(MeshShape s, int world_size) {
    if (s.tp < 1 || s.pp < 1 || s.dp < 1)
      fail("mesh sizes must be at least 1, got TP=" + std::to_string(s.tp) +
           " PP=" + std::to_string(s.pp) + " DP=" + std::to_string(s.dp));
    if (s.product() != world_size)
      fail("mesh TP=" + std::to_string(s.tp) + " x PP=" + std::to_string(s.pp) +
           " x DP=" + std::to_string(s.dp) + " = " + std::to_string(s.product()) +
           " ranks, but the world has " + std::to_string(world_size) + " ranks");
  }

  const MeshShape& shape() const { return shape_; }
  const MeshCoord& coord() const { return coord_; }
  int rank() const { return world_.rank(); }
  int size() const { return world_.size(); }
  int rank_of(MeshCoord c) const { return c.tp + shape_.tp * (c.dp + shape_.dp * c.pp); }

  const Comm& world() const { return world_; }
  const Comm& tp() const { return tp_; }  // same (pp, dp): tensor-parallel group
  const Comm& pp() const { return pp_; }  // same (tp, dp): one pipeline; rank = stage
  const Comm& dp() const { return dp_; }  // same (tp, pp): data-parallel replicas of a shard
  const Comm& mp() const { return mp_; }  // same dp: one whole model replica (tp x pp)
  // First and last pipeline stage with the same (tp, dp), which both hold the tied word
  // embedding; a null Comm on the other stages and when PP = 1.
  const Comm& embedding() const { return embedding_; }

  int stage() const { return coord_.pp; }
  bool is_first_stage() const { return coord_.pp == 0; }
  bool is_last_stage() const { return coord_.pp == shape_.pp - 1; }
  // Pipeline neighbours as ranks of pp(); -1 at the ends.
  int prev_stage() const { return is_first_stage() ? -1 : coord_.pp - 1; }
  int next_stage() const { return is_last_stage() ? -1 : coord_.pp + 1; }

  // "TP(2)-PP(2)-DP(2)-Rank(5)", as picotron prints its process groups.
  std::string to_string() const {
    return "TP(" + std::to_string(shape_.tp) + ")-PP(" + std::to_string(shape_.pp) + ")-DP(" +
           std::to_string(shape_.dp) + ")-Rank(" + std::to_string(rank()) + ")";
  }

 private:
  MeshShape shape_;
  MeshCoord coord_;
  Comm world_, tp_, pp_, dp_, mp_, embedding_;
};

// Compile-time sizes: Mesh<2,2,2> mesh(world).
template <int TP, int PP, int DP>
class Mesh : public Mesh<> {
  static_assert(TP >= 1 && PP >= 1 && DP >= 1, "mesh sizes must be at least 1");

 public:
  static constexpr MeshShape kShape{TP, PP, DP};
  explicit Mesh(const Comm& world) : Mesh<>(world, kShape) {}
};

}  // namespace trident
