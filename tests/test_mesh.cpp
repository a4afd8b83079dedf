// Mesh<TP,PP,DP>: coordinates and groups against the rank table of mesh.hpp, printing, and the
// error for shapes that do not fit the world.
#include <trident/mesh/mesh.hpp>
#include <trident/mesh/topology.hpp>

#include "mpi_test.hpp"

using namespace trident;

namespace {
// World ranks of the members of `group`, gathered over it.
std::vector<int> members(const Comm& group, const Comm& world) {
  std::vector<int> me{world.rank()}, all(group.size());
  group.all_gather<int>(me, all);
  return all;
}
}  // namespace

TEST_CASE("TP2-PP2-DP2: coordinates and groups follow rank = tp + TP*(dp + DP*pp)") {
  TRIDENT_RANKS(8, world);
  const Mesh<2, 2, 2> mesh(world);
  const int r = world.rank();
  // the table in mesh.hpp
  const int table[8][3] = {{0, 0, 0}, {1, 0, 0}, {0, 0, 1}, {1, 0, 1},
                           {0, 1, 0}, {1, 1, 0}, {0, 1, 1}, {1, 1, 1}};
  CHECK(mesh.coord().tp == table[r][0]);
  CHECK(mesh.coord().pp == table[r][1]);
  CHECK(mesh.coord().dp == table[r][2]);
  CHECK(mesh.rank_of(mesh.coord()) == r);

  CHECK(members(mesh.tp(), world) == std::vector<int>{r & ~1, (r & ~1) + 1});
  CHECK(members(mesh.pp(), world) == std::vector<int>{r % 4, r % 4 + 4});
  const int dp0 = (r / 4) * 4 + r % 2;
  CHECK(members(mesh.dp(), world) == std::vector<int>{dp0, dp0 + 2});
  const int mp0 = r % 4 / 2 * 2;  // same dp: {0,1,4,5} or {2,3,6,7}
  CHECK(members(mesh.mp(), world) == std::vector<int>{mp0, mp0 + 1, mp0 + 4, mp0 + 5});
  REQUIRE(mesh.embedding().valid());  // PP=2: every rank is on the first or last stage
  CHECK(members(mesh.embedding(), world) == std::vector<int>{r % 4, r % 4 + 4});

  CHECK(mesh.pp().rank() == mesh.stage());
  CHECK(mesh.is_first_stage() == (r < 4));
  CHECK(mesh.is_last_stage() == (r >= 4));
  CHECK(mesh.next_stage() == (r < 4 ? 1 : -1));
  CHECK(mesh.prev_stage() == (r < 4 ? -1 : 0));
  CHECK(mesh.to_string() == "TP(2)-PP(2)-DP(2)-Rank(" + std::to_string(r) + ")");
  CHECK(mesh.tp().name() == "tp");
}

TEST_CASE("TP2-CP2-DP2: rank = tp + TP*(cp + CP*dp), the CP ring and the DP x CP group") {
  TRIDENT_RANKS(8, world);
  const Mesh<> mesh(world, MeshShape{2, 1, 2, 2});
  const int r = world.rank(), tp = r % 2, cp = (r / 2) % 2, dp = r / 4;
  CHECK(mesh.coord().tp == tp);
  CHECK(mesh.coord().cp == cp);
  CHECK(mesh.coord().dp == dp);
  CHECK(mesh.rank_of(mesh.coord()) == r);
  CHECK(members(mesh.tp(), world) == std::vector<int>{r & ~1, (r & ~1) + 1});
  CHECK(members(mesh.cp(), world) == std::vector<int>{4 * dp + tp, 4 * dp + tp + 2});
  CHECK(members(mesh.dp(), world) == std::vector<int>{r % 4, r % 4 + 4});
  // the gradient group: every rank with this rank's parameters, in order cp + CP * dp
  CHECK(members(mesh.dp_cp(), world) == std::vector<int>{tp, tp + 2, tp + 4, tp + 6});
  CHECK(mesh.dp_cp().rank() == cp + 2 * dp);
  CHECK(members(mesh.mp(), world) == std::vector<int>{r & ~1, (r & ~1) + 1});
  CHECK(mesh.to_string() == "TP(2)-CP(2)-PP(1)-DP(2)-Rank(" + std::to_string(r) + ")");
  CHECK_THROWS_WITH_AS(Mesh<>::validate(MeshShape{2, 1, 2, 3}, 8),
                       "mesh TP=2 x CP=3 x PP=1 x DP=2 = 12 ranks, but the world has 8 ranks",
                       Error);
}

TEST_CASE("Mesh<> with runtime sizes: TP1-PP4-DP1 has an embedding group of stages 0 and 3") {
  TRIDENT_RANKS(4, world);
  const Mesh<> mesh(world, MeshShape{1, 4, 1});
  CHECK(mesh.stage() == world.rank());
  CHECK(mesh.embedding().valid() == (mesh.is_first_stage() || mesh.is_last_stage()));
  if (mesh.embedding().valid()) CHECK(members(mesh.embedding(), world) == std::vector<int>{0, 3});
  CHECK(mesh.tp().size() == 1);
  CHECK(mesh.dp().size() == 1);
  const Topology t = topology(mesh);
  CHECK(t.nodes >= 1);
  CHECK_FALSE(t.tp_spans_nodes);  // TP=1 never spans
}

TEST_CASE("a shape that does not multiply to the world size is refused with the product") {
  TRIDENT_RANKS(1, world);
  std::string message;
  try {
    Mesh<>::validate(MeshShape{8, 16, 64}, 128);
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK(message == "mesh TP=8 x PP=16 x DP=64 = 8192 ranks, but the world has 128 ranks");
  CHECK_THROWS_WITH_AS(Mesh<>(world, MeshShape{0, 1, 1}),
                       "mesh sizes must be at least 1, got TP=0 PP=1 DP=1", Error);
  CHECK_THROWS_AS(Mesh<>(world, MeshShape{2, 1, 1}), Error);
}
