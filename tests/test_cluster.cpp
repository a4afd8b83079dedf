// On a cluster: 4 ranks on 2 nodes, run by cmake/cluster.sh (emulated nodes: network
// namespaces joined by a shaped link; tests.cmake runs it as root and reports it skipped
// elsewhere). Node detection sees the nodes; TP2 inside each node with PP2 across matches the
// single-process reference; the bytes that crossed the link match the formulas.
#include <trident/core/wire.hpp>
#include <trident/mesh/topology.hpp>
#include <trident/plan/communication.hpp>
#include <trident/train/formulas.hpp>

#include "parity.hpp"

using namespace trident;

namespace {
// TP2-PP2-DP1 on 4 ranks, 1F1B: ranks 0, 1 (stage 0) on node 0, ranks 2, 3 (stage 1) on node 1.
TrainOptions across_nodes(int hidden) {
  TrainOptions o = test::small_options({2, 2, 1});
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

// What crosses the link: only the pipeline's messages (b s h per microbatch per boundary each
// way, every TP rank its own copy), the tied embedding's gradient all-reduce between the first
// and last stage (a ring over 2 ranks sends its buffer once) and the loss's and norm's doubles.
// The counters see Ethernet frames: payload plus 66 bytes of Ethernet, IP and TCP headers per
// packet, TCP's acknowledgements, and UCX's headers and rendezvous handshakes.
TEST_CASE("the bytes on the wire per step: the pipeline's and the tied embedding's formulas") {
  TRIDENT_RANKS(4, comm);
  const TrainOptions o = across_nodes(128);  // 64 KiB per pipeline message
  Trainer<double> t(comm, o, TokenSource::synthetic(o.model.vocab));
  t.step();  // connections set up
  const int steps = 3;
  const double before = world_wire_sent(comm);
  for (int s = 0; s < steps; ++s) t.step();
  const double wire = (world_wire_sent(comm) - before) / steps;
  const Traffic f = traffic_formula(t);
  const double formula =
      comm.all_reduce_value(f.pp + plan::ring_all_reduce_bytes(f.emb, 2) + 2 * sizeof(double));
  if (comm.rank() == 0)
    std::printf(
        "wire bytes per step, 2 nodes: measured %.0f, formula %.0f (PP %.0f + tied "
        "embedding %.0f per rank 0), ratio %.4f\n",
        wire, formula, f.pp, f.emb, wire / formula);
  CHECK(wire >= formula);
  CHECK(wire <= 1.10 * formula);
}
