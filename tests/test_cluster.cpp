// On a cluster: 4 ranks on 2 nodes, run by cmake/cluster.sh (emulated nodes: network
// namespaces joined by a shaped link; tests.cmake runs it as root and reports it skipped
// elsewhere). Node detection sees the nodes; TP2 inside each node with PP2 across matches the
// single-process reference; the bytes that crossed the link match the formulas.
#include <cstring>

#include <trident/core/wire.hpp>
#include <trident/costmodel/inter_node.hpp>
#include <trident/mesh/topology.hpp>
#include <trident/train/formulas.hpp>

#include "parity.hpp"
#include "shm_testing.hpp"

using namespace trident;

namespace {
// TP2-PP2-DP1 on 4 ranks, 1F1B: ranks 0, 1 (stage 0) on node 0, ranks 2, 3 (stage 1) on node 1.
gpt2::Options across_nodes(int hidden) {
  gpt2::Options o = test::small_options({2, 2, 1});
  o.model.hidden = hidden;
  o.schedule = pp::ScheduleKind::one_f_one_b;
  o.microbatches = 2;
  return o;
}
}  // namespace

TEST_CASE("node detection: 2 nodes of 2 ranks; TP2 stays inside a node, TP4 spans both") {
  TRIDENT_RANKS(4, comm);
  const Topology inside = topology(Mesh<>(comm, {2, 2, 1}));
  CHECK(inside.nodes == 2);
  CHECK(inside.ranks_per_node == 2);
  CHECK_FALSE(inside.tp_spans_nodes);
  CHECK(warn_if_tp_spans_nodes(Mesh<>(comm, {4, 1, 1})).tp_spans_nodes);  // rank 0 warns
}

TEST_CASE("TP2 inside each node, PP2 across the link: the reference, 3 steps in double, 1e-10") {
  TRIDENT_RANKS(4, comm);
  test::check_parity<double>(comm, across_nodes(32), 3, 1e-10);
}

TEST_CASE("all_reduce and reduce_scatter across the nodes: hierarchical, bitwise in node order") {
  TRIDENT_RANKS(4, comm);
  const Comm group = comm.dup("across");
  CHECK(node_hierarchy(group.get()) != nullptr);  // the nodes are found apart: the path is taken
  const std::size_t n = 4 * 3001;
  const std::vector<double> x = test::order_sensitive<double>(n, comm.rank());
  const std::vector<double> expected = test::node_order_sum(group, x, 2);  // 2 ranks per node
  std::vector<double> reduced = x, shard(n / 4);
  test::with_shm(true, [&] {
    group.all_reduce(Span<double>(reduced));
    group.reduce_scatter<double>(x, shard);
  });
  CHECK(std::memcmp(reduced.data(), expected.data(), n * sizeof(double)) == 0);
  CHECK(std::memcmp(shard.data(), expected.data() + comm.rank() * (n / 4),
                    shard.size() * sizeof(double)) == 0);
}

TEST_CASE("all_gather and broadcast across the nodes: hierarchical, bitwise MPI's path") {
  TRIDENT_RANKS(4, comm);
  const Comm group = comm.dup("across");
  CHECK(node_hierarchy(group.get()) != nullptr);
  const std::size_t n = 3001;
  const std::vector<double> x = test::order_sensitive<double>(n, comm.rank());
  std::vector<double> shm(4 * n), mpi(4 * n);
  test::with_shm(true, [&] { group.all_gather<double>(x, shm); });
  test::with_shm(false, [&] { group.all_gather<double>(x, mpi); });
  CHECK(std::memcmp(shm.data(), mpi.data(), shm.size() * sizeof(double)) == 0);
  for (int root = 0; root < 4; ++root) {
    std::vector<double> from_shm = x, from_mpi = x;
    test::with_shm(true, [&] { group.broadcast(Span<double>(from_shm), root); });
    test::with_shm(false, [&] { group.broadcast(Span<double>(from_mpi), root); });
    CHECK(std::memcmp(from_shm.data(), from_mpi.data(), n * sizeof(double)) == 0);
  }
}

// What crosses the link, per step, against costmodel/inter_node.hpp's count of the formulas'
// per-rank bytes (train/formulas.hpp) as MPICH's algorithms move them: TP2-PP2 (the pipeline's
// messages and the tied embedding's all-reduce cross), TP4 (Rabenseifner's all-reduces cross)
// and ZeRO-3 over DP4 (pairwise reduce-scatters and ring all-gathers cross). The counters see
// Ethernet frames: the payload plus headers (Ethernet, IP, TCP: 66 bytes per packet, packets of
// up to 64 KiB with segmentation offload), TCP's acknowledgements, UCX's headers and handshakes
// and a few doubles over the world (loss, norm): at most 10% here. The formulas count MPI's
// algorithms: the hierarchical shared-memory path (core/shm_hierarchy.hpp), which sends half of
// what Rabenseifner's all-reduce sends across 2 nodes, is off here.
TEST_CASE("the bytes on the wire per step: TP, PP and ZeRO-3's DP across nodes, as formulas") {
  TRIDENT_RANKS(4, comm);
  const ShmTuning saved = shm_tuning();
  shm_tuning().enabled = false;
  const costmodel::InterNode nodes{2};
  const plan::Precision doubles{"double", 8, 8, 16, 8};
  gpt2::Options tp4 = across_nodes(128), zero3 = tp4;
  tp4.mesh = {4, 1, 1};
  tp4.microbatches = 1;
  zero3.mesh = {1, 1, 4};
  zero3.microbatches = 1;
  zero3.zero = Zero<3>;
  for (const gpt2::Options& o : {across_nodes(128), tp4, zero3}) {
    gpt2::Trainer<double> t(comm, o, TokenSource::synthetic(o.model.vocab));
    (void)t.step();  // connections set up
    const int steps = 3;
    const double before = world_wire_sent(comm);
    for (int s = 0; s < steps; ++s) (void)t.step();
    const double wire = (world_wire_sent(comm) - before) / steps;
    const Traffic mine = traffic_formula(t);
    std::vector<double> all(16);
    comm.all_gather(Span<const double>(&mine.tp, 4), Span<double>(all));
    std::vector<RankFigures> ranks(4);
    for (int r = 0; r < 4; ++r)
      ranks[r].formula = {all[4 * r], all[4 * r + 1], all[4 * r + 2], all[4 * r + 3]};
    const costmodel::AxisFigures x = costmodel::inter_node_bytes(o, ranks, doubles, nodes);
    INFO("TP" << o.mesh.tp << " PP" << o.mesh.pp << " DP" << o.mesh.dp << " ZeRO-" << o.zero.stage);
    if (comm.rank() == 0)
      std::printf(
          "wire bytes per step, TP%d PP%d DP%d ZeRO-%d: measured %.0f, formula %.0f "
          "(TP %.0f, PP %.0f, DP %.0f, emb %.0f), ratio %.4f\n",
          o.mesh.tp, o.mesh.pp, o.mesh.dp, o.zero.stage, wire, x.total(), x.tp, x.pp, x.dp, x.emb,
          wire / x.total());
    CHECK(wire >= x.total());
    CHECK(wire <= 1.10 * x.total());
  }
  shm_tuning() = saved;
}
