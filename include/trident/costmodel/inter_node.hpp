// trident/costmodel/inter_node.hpp: the bytes of a run that cross the links between nodes, and the
// cost model's calls priced on such a link.
//
// Ranks sit on nodes in order, `ranks_per_node` each, with rank = tp + TP * (dp + DP * pp)
// (mesh/mesh.hpp). Which bytes of a collective cross depends on the algorithm, so each is
// counted as MPICH runs it on a power-of-two group (Thakur, Rabenseifner and Gropp 2005,
// "Optimization of Collective Communication Operations in MPICH"): an all-reduce of more than
// 2 KiB as Rabenseifner's reduce-scatter by recursive halving then all-gather by recursive
// doubling (at distance d a rank sends n / 2d each way: only the last, smallest steps cross
// when nodes hold blocks of neighbours), under as recursive doubling (n per step); a
// reduce-scatter of large buffers as pairwise exchange (n / g to each other member); an
// all-gather of 512 KiB or more as a ring ((g-1)/g n over every edge), under as recursive
// doubling (d n / g at distance d). A point-to-point message crosses when its ends do.
// Per-step totals are counted as one call: the few calls under a threshold (the position
// embedding's and the last LayerNorm's units) move under 1% of the bytes.
#pragma once

#include <vector>

#include "../core/message_tags.hpp"
#include "../plan/communication.hpp"
#include "../train/report.hpp"
#include "predict.hpp"

namespace trident::costmodel {

// the paper planner's formulas, shapes and presets, which this model builds on
using namespace plan;

struct InterNode {
  int ranks_per_node = 1;
  int node(long long rank) const { return int(rank / ranks_per_node); }

  // Bytes that cross between nodes, all members together, in one call of `op` moving `bytes`
  // (CommStats' convention: the whole buffer) over `members`, a power-of-two group in order.
  double crossing_bytes(CommOp op, double bytes, const std::vector<long long>& m) const {
    const std::size_t g = m.size();
    auto apart = [&](std::size_t i, std::size_t j) { return node(m[i]) != node(m[j]) ? 1.0 : 0.0; };
    if (op == CommOp::send) return apart(0, g - 1) * bytes;  // one message between the ends
    double x = 0;
    for (std::size_t i = 0; i < g; ++i) {
      if (op == CommOp::reduce_scatter)
        for (std::size_t j = 0; j < g; ++j) x += apart(i, j) * bytes / double(g);
      if (op == CommOp::all_gather && bytes >= 512 * 1024)
        x += apart(i, (i + 1) % g) * ring_gather_bytes(bytes, int(g));
      for (std::size_t d = 1; d < g; d *= 2) {  // the recursive steps, partner at distance d
        if (op == CommOp::all_gather && bytes < 512 * 1024) x += apart(i, i ^ d) * d * bytes / g;
        if (op == CommOp::all_reduce) x += apart(i, i ^ d) * (bytes > 2048 ? bytes / d : bytes);
      }
    }
    return x;
  }
};

// The groups of axis 't', 'd' or 'p' of mesh s, as lists of world ranks.
inline std::vector<std::vector<long long>> axis_groups(const MeshShape& s, char axis) {
  const long long T = s.tp, D = s.dp, P = s.pp;
  const long long outer = axis == 't' ? P * D : axis == 'd' ? P * T : D * T;
  const long long size = axis == 't' ? T : axis == 'd' ? D : P;
  std::vector<std::vector<long long>> groups(static_cast<std::size_t>(outer));
  for (long long k = 0; k < outer; ++k)
    for (long long i = 0; i < size; ++i) {
      // (t, d, p) of member i of group k
      const long long t = axis == 't' ? i : k % T,
                      d = axis == 'd'   ? i
                          : axis == 't' ? k % D
                                        : k / T,
                      p = axis == 'p'   ? i
                          : axis == 't' ? k / D
                                        : k / T;
      groups[k].push_back(t + T * (d + D * p));
    }
  return groups;
}

// Bytes per step that cross between nodes, all nodes and both directions together, per axis,
// from each rank's bytes per axis (`ranks`, world rank order: RunReport's formula, or the cost
// model's). DP: ZeRO-0 an all-reduce of Psi; else reduce-scatters (once, or per microbatch) and
// all-gathers (the rest). emb: the tied embedding's all-reduce between first and last stage.
inline AxisFigures inter_node_bytes(const gpt2::Options& o, const std::vector<RankFigures>& ranks,
                                    const Precision& p, const InterNode& nodes) {
  const MeshShape& s = o.mesh;
  AxisFigures x;
  auto axis = [&](char a, auto&& each) {
    for (const auto& g : axis_groups(s, a))
      if (g.size() > 1) each(g, ranks[std::size_t(g[0])].formula);
  };
  axis('t', [&](const auto& g, const Traffic& f) {
    x.tp += nodes.crossing_bytes(CommOp::all_reduce, f.tp, g);
  });
  axis('d', [&](const auto& g, const Traffic& f) {
    if (o.zero.all_reduces_gradients()) {
      x.dp += nodes.crossing_bytes(CommOp::all_reduce, f.dp, g);
      return;
    }
    const int stage = int(g[0] / (s.tp * s.dp));
    const double scatter = (o.zero.reduces_per_microbatch() ? o.microbatches : 1) *
                           stage_parameters(o, stage) * p.grad_bytes;
    x.dp += nodes.crossing_bytes(CommOp::reduce_scatter, scatter, g) +
            nodes.crossing_bytes(CommOp::all_gather, f.dp - scatter, g);
  });
  axis('p', [&](const auto& g, const Traffic&) {  // each rank's messages, and its emb buffer
    for (long long r : g) {
      x.pp += nodes.crossing_bytes(CommOp::send, ranks[std::size_t(r)].formula.pp, g);
      x.emb += nodes.crossing_bytes(CommOp::send, ranks[std::size_t(r)].formula.emb, g);
    }
  });
  return x;
}

// The link between two nodes as MPI sees it: each rank of node 0 exchanges a buffer with its
// counterpart on node 1, all pairs at once, both ways, for three sizes a factor 4 apart, the
// largest up to 0.6 s of the link at its nominal `link_bytes_per_s` (16 MiB a pair at
// 1 Gbit/s), so that a loaded machine's hiccups stay small next to it; seconds = latency +
// (bytes each way, all pairs) / bandwidth, fitted (the slowest rank, median of 5). Collective
// over `world`, 2 nodes of ranks_per_node ranks.
inline LinearFit measure_link(const Comm& world, const InterNode& nodes, double link_bytes_per_s) {
  const int n = nodes.ranks_per_node, partner = (world.rank() + n) % (2 * n);
  std::size_t largest = std::size_t(1) << 16;
  while (double(largest) * 2 * n <= 0.6 * link_bytes_per_s && largest < (std::size_t(1) << 24))
    largest *= 2;
  std::vector<double> bytes, seconds;
  for (std::size_t size : {largest / 16, largest / 4, largest}) {
    std::vector<char> out(size, 1), in(size);
    seconds.push_back(detail::time_together(world, 5, [&] {
      Request r = world.irecv(Span<char>(in), partner, message_tags::kInterNodeProbe);
      world.isend(Span<const char>(out), partner, message_tags::kInterNodeProbe).wait();
      r.wait();
    }));
    bytes.push_back(double(size) * n);
  }
  return fit_line(bytes, seconds);
}

// The cost model's machine `m` (calibrated on the cluster's ranks) with each call whose groups
// cross nodes priced on the link instead: its calibrated latency, and the link's bytes/s each
// way shared by all the axis' groups that make the call at once (their crossing bytes, half
// each way for a collective, over the call's CommStats bytes).
inline Machine over_link(Machine m, const gpt2::Options& o, const InterNode& nodes,
                         double link_bytes_per_s) {
  if (!m.measured) return m;
  const MeshShape& s = o.mesh;
  auto reprice = [&](Calibration::Calls& calls, CommOp op, char axis, int group) {
    auto it = calls.find({op, group});
    const double bytes = 1 << 20, ways = op == CommOp::send ? 1 : 2;  // a message goes one way
    double load = 0;  // bytes each way per byte of the call
    for (const auto& g : axis_groups(s, axis)) load += nodes.crossing_bytes(op, bytes, g) / ways;
    load /= bytes;
    if (it != calls.end() && load > 0) it->second.bandwidth = link_bytes_per_s / load;
  };
  Calibration& c = *m.measured;
  for (Calibration::Calls* calls : {&c.calls, &c.loop_calls}) {
    if (s.tp > 1) reprice(*calls, CommOp::all_reduce, 't', s.tp);
    if (s.dp > 1)
      for (CommOp op : {CommOp::all_reduce, CommOp::reduce_scatter, CommOp::all_gather})
        reprice(*calls, op, 'd', s.dp);
  }
  if (s.pp > 1) {  // messages, and the tied embedding's all-reduce over (first, last) stage
    reprice(c.loop_calls, CommOp::send, 'p', 2);
    reprice(c.calls, CommOp::all_reduce, 'p', 2);
  }
  return m;
}

}  // namespace trident::costmodel
