// examples/mesh: how one world of ranks becomes tensor-, context-, pipeline- and data-parallel
// groups.
//
//   mpiexec -n 8 ./mesh --tp 2 --pp 2 --dp 2
//   mpiexec -n 8 ./mesh --tp 2 --cp 2 --dp 2
//
// Each rank prints its coordinates and the world ranks of its groups, in rank order.
#include <cstdio>
#include <string>
#include <trident/io/cli.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/trident.hpp>

using namespace trident;

namespace {
std::string members(const Comm& group, const Comm& world) {
  if (!group.valid()) return "-";
  std::vector<int> me{world.rank()}, all(group.size());
  group.all_gather<int>(me, all);
  std::string s = "{";
  for (size_t i = 0; i < all.size(); ++i) s += (i ? "," : "") + std::to_string(all[i]);
  return s + "}";
}
}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    MeshShape shape;
    cli::App app{"Print the TP x CP x PP x DP mesh: each rank's coordinates and groups."};
    app.add_option("--tp", shape.tp, "tensor-parallel size")->check(cli::PositiveNumber);
    app.add_option("--cp", shape.cp, "context-parallel size")->check(cli::PositiveNumber);
    app.add_option("--pp", shape.pp, "pipeline-parallel size")->check(cli::PositiveNumber);
    app.add_option("--dp", shape.dp, "data-parallel size")->check(cli::PositiveNumber);
    parse_command_line(app, argc, argv, world);

    const Mesh<> mesh(world, shape);
    warn_if_tp_spans_nodes(mesh);
    // the CP columns only when there is a CP axis (the 3D table otherwise, as before)
    const bool cp = shape.cp > 1;
    if (world.rank() == 0) {
      std::printf(
          cp ? "rank = tp + TP*(cp + CP*(dp + DP*pp))   (Megatron-Core order: TP fastest, "
               "then CP, DP, PP; gradients summed over the dp x cp group)\n"
             : "rank = tp + TP*(dp + DP*pp)   (Megatron-LM order: TP fastest, then DP, PP)\n");
      std::printf("%-32s %4s %4s %4s", "mesh", "tp", "pp", "dp");
      if (cp) std::printf(" %4s", "cp");
      std::printf("  %-10s %-10s %-10s %-10s", "tp group", "pp group", "dp group", "emb group");
      if (cp) std::printf(" %-10s %-14s", "cp ring", "dp x cp group");
      std::printf("\n");
    }
    const std::string tp = members(mesh.tp(), world), pp = members(mesh.pp(), world),
                      dp = members(mesh.dp(), world), emb = members(mesh.embedding(), world),
                      ring = members(mesh.cp(), world), dp_cp = members(mesh.dp_cp(), world);
    for (int r = 0; r < world.size(); ++r) {
      world.barrier();
      if (r != world.rank()) continue;
      std::printf("%-32s %4d %4d %4d", mesh.to_string().c_str(), mesh.coord().tp, mesh.coord().pp,
                  mesh.coord().dp);
      if (cp) std::printf(" %4d", mesh.coord().cp);
      std::printf("  %-10s %-10s %-10s %-10s", tp.c_str(), pp.c_str(), dp.c_str(), emb.c_str());
      if (cp) std::printf(" %-10s %-14s", ring.c_str(), dp_cp.c_str());
      std::printf("\n");
      std::fflush(stdout);
    }
    return 0;
  });
}
