// trident/mesh/mesh.hpp: Mesh<TP,PP,DP>, one world of ranks seen as a grid of groups: tensor,
// context, data and pipeline parallel (ARCHITECTURE §3).
//
// Rank order (Megatron-LM's): TP fastest, then CP, then DP, then PP:
//     rank = tp + TP * (cp + CP * (dp + DP * pp))
// so a tensor-parallel group is TP neighbouring ranks, which fit inside one node, the context-
// parallel ring (cp/context_parallel.hpp) comes next, and pipeline stages are the slowest axis,
// the one that crosses nodes. Context-parallel ranks hold the same parameters and different
// tokens of the same sequences: their gradients are summed with the data-parallel replicas',
// over dp_cp() (Megatron-Core's data-parallel-with-context group), which is also the group ZeRO
// shards over. With CP = 1 (the default) dp_cp() is dp(). For TP2-PP2-DP2:
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

// Fields in the order of the original Mesh<TP,PP,DP>: MeshShape{tp, pp, dp} still reads so.
struct MeshShape {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int cp = 1;  // context parallel: ranks that split every sequence's tokens
  int product() const { return tp * pp * dp * cp; }
};

struct MeshCoord {
  int tp = 0;
  int pp = 0;
  int dp = 0;
  int cp = 0;
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
    const int r = world.rank(), T = shape.tp, C = shape.cp, D = shape.dp;
    coord_ = {r % T, r / (T * C * D), (r / (T * C)) % D, (r / T) % C};
    const auto [t, p, d, c] = coord_;
    // color = the coordinates that stay fixed; key = the coordinates that vary
    tp_ = world.split((p * D + d) * C + c, t, "tp");
    cp_ = world.split((p * D + d) * T + t, c, "cp");
    pp_ = world.split((d * C + c) * T + t, p, "pp");
    dp_ = world.split((p * C + c) * T + t, d, "dp");
    dp_cp_ = C == 1 ? dp_.borrowed() : world.split(p * T + t, d * C + c, "dp_cp");
    mp_ = world.split(d * C + c, p * T + t, "mp");  // tensor x pipeline: a model replica
    const bool tied = shape.pp > 1 && (p == 0 || p == shape.pp - 1);
    embedding_ = world.split(tied ? (d * C + c) * T + t : Comm::kUndefined, p, "emb");
  }

  static void validate(MeshShape s, int world_size) {
    const std::string cp = s.cp != 1 ? " x CP=" + std::to_string(s.cp) : "";
    if (s.tp < 1 || s.pp < 1 || s.dp < 1 || s.cp < 1)
      fail("mesh sizes must be at least 1, got TP=" + std::to_string(s.tp) +
           " PP=" + std::to_string(s.pp) + " DP=" + std::to_string(s.dp) +
           (s.cp != 1 ? " CP=" + std::to_string(s.cp) : ""));
    if (s.product() != world_size)
      fail("mesh TP=" + std::to_string(s.tp) + cp + " x PP=" + std::to_string(s.pp) +
           " x DP=" + std::to_string(s.dp) + " = " + std::to_string(s.product()) +
           " ranks, but the world has " + std::to_string(world_size) + " ranks");
  }

  const MeshShape& shape() const { return shape_; }
  const MeshCoord& coord() const { return coord_; }
  int rank() const { return world_.rank(); }
  int size() const { return world_.size(); }
  int rank_of(MeshCoord c) const {
    return c.tp + shape_.tp * (c.cp + shape_.cp * (c.dp + shape_.dp * c.pp));
  }

  const Comm& world() const { return world_; }
  const Comm& tp() const { return tp_; }  // same (cp, pp, dp): tensor-parallel group
  const Comm& cp() const { return cp_; }  // same (tp, pp, dp): the context-parallel ring
  const Comm& pp() const { return pp_; }  // same (tp, cp, dp): one pipeline; rank = stage
  const Comm& dp() const { return dp_; }  // same (tp, cp, pp): data-parallel replicas
  // same (tp, pp): every rank holding this rank's parameter shard; rank = cp + CP * dp. The
  // gradient reduction and ZeRO's sharding run over it.
  const Comm& dp_cp() const { return dp_cp_; }
  const Comm& mp() const { return mp_; }  // same (dp, cp): one whole model replica (tp x pp)
  // First and last pipeline stage with the same (tp, cp, dp), which both hold the tied word
  // embedding; a null Comm on the other stages and when PP = 1.
  const Comm& embedding() const { return embedding_; }

  int stage() const { return coord_.pp; }
  bool is_first_stage() const { return coord_.pp == 0; }
  bool is_last_stage() const { return coord_.pp == shape_.pp - 1; }
  // Pipeline neighbours as ranks of pp(); -1 at the ends.
  int prev_stage() const { return is_first_stage() ? -1 : coord_.pp - 1; }
  int next_stage() const { return is_last_stage() ? -1 : coord_.pp + 1; }

  // "TP(2)-PP(2)-DP(2)-Rank(5)", as picotron prints its process groups ("-CP(2)" after TP
  // when CP > 1).
  std::string to_string() const {
    const std::string cp = shape_.cp > 1 ? "-CP(" + std::to_string(shape_.cp) + ")" : "";
    return "TP(" + std::to_string(shape_.tp) + ")" + cp + "-PP(" + std::to_string(shape_.pp) +
           ")-DP(" + std::to_string(shape_.dp) + ")-Rank(" + std::to_string(rank()) + ")";
  }

 private:
  MeshShape shape_;
  MeshCoord coord_;
  Comm world_, tp_, cp_, pp_, dp_, dp_cp_, mp_, embedding_;
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
