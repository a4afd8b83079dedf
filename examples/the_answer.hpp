// examples/the_answer.hpp: zero_vs_3d's closing table — "with ZeRO, why do we still need 3D
// parallelism?" in one table at three scales, pure ZeRO-3 next to the best 3D layout of each:
//  - this machine, 8 ranks: the five runs above, measured;
//  - 2 nodes of 4 ranks joined by a 100 Mbit/s link: examples/zero_vs_3d_cluster's four runs,
//    predicted by the cost model calibrated on these ranks with the calls that cross nodes priced
//    on the link (costmodel/inter_node.hpp; examples/README.md §6 measures them);
//  - GPT-3 175B on 1024 A100s, 8 per node: the cost model's formulas (examples/gpt3_175b.hpp).
// Then the two arguments the table rests on: pure data parallelism can use no more ranks than a
// step has sequences, and ZeRO-3's traffic can hide behind compute only when a rank computes
// more FLOPs per byte it sends across nodes than its node computes per byte of its link.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <trident/costmodel/inter_node.hpp>
#include <trident/costmodel/measured.hpp>
#include <trident/io/bar_chart_svg.hpp>

#include "comparison.hpp"

namespace trident::examples {

using namespace trident::costmodel;

struct AnswerRow {
  std::string run;
  double states = 0, activations = 0;  // bytes, the most loaded rank
  double sent = 0;    // bytes per step, the most sending rank, buffers (the report's convention)
  double across = 0;  // bytes per step a rank sends across nodes, on the wire (mean); -1: 1 node
  AxisFigures wire{}, wire_across{};  // bytes per step a rank sends on the wire by axis (mean): all
                                      // of them, and those across nodes
  double flops = 0;                   // GEMM FLOPs per step of a rank (the busiest stage)
  double step_s = 0;
};

struct AnswerScale {
  std::string name, how, label;   // label: the name in a few words, under the picture's bars
  double unit = 1;                // bytes of the unit below
  const char* unit_name = "";     // "MiB", "GB"
  int batch = 0;                  // sequences per step: what pure DP can spread over
  int model_parallel = 1;         // TP x PP of the best 3D layout
  double node_flop_per_byte = 0;  // a node's FLOP/s over its link's bytes/s each way; 0: 1 node
  AnswerRow zero3, best;
};

inline AnswerScale answer_scale(std::string name, std::string label, std::string how, double unit,
                                const char* unit_name, int batch) {
  AnswerScale a;
  a.name = std::move(name);
  a.label = std::move(label);
  a.how = std::move(how);
  a.unit = unit;
  a.unit_name = unit_name;
  a.batch = batch;
  return a;
}

// Row r's bytes on the wire by axis, per rank per step (the mean), as MPICH's algorithms move
// the bytes of `ranks`' formulas (costmodel/inter_node.hpp): between any two ranks (every rank
// its own node), and between the nodes of `nodes`.
inline void wire_by_axis(AnswerRow& r, const gpt2::Options& o,
                         const std::vector<RankFigures>& ranks, const Precision& precision,
                         const InterNode& nodes) {
  const double n = double(o.mesh.product());
  auto per_rank = [n](AxisFigures x) {
    for (double* v : {&x.tp, &x.pp, &x.dp, &x.emb, &x.cp}) *v /= n;
    return x;
  };
  r.wire = per_rank(inter_node_bytes(o, ranks, precision, InterNode{1}));
  r.wire_across = per_rank(inter_node_bytes(o, ranks, precision, nodes));
  r.across = r.wire_across.total();
}

// A predicted run as a row; across: priced by costmodel/inter_node.hpp on `nodes`.
inline AnswerRow predicted_row(const std::string& name, const gpt2::Options& o, const Prediction& p,
                               const Precision& precision, const InterNode& nodes) {
  AnswerRow r{name};
  for (const StagePrediction& s : p.stages) {
    r.states = std::max(r.states, s.states.total());
    r.activations = std::max(r.activations, s.activations);
    r.sent = std::max(r.sent, s.bytes.total());
    r.flops = std::max(r.flops, s.flops);
  }
  wire_by_axis(r, o, predicted_ranks(o, p), precision, nodes);
  r.step_s = p.step_s;
  return r;
}

// The middle scale: the cluster runs calibrated here (collective over `world`, 8 ranks) and
// predicted over a 100 Mbit/s link between 2 nodes of 4; the best 3D layout is the fastest
// predicted.
inline AnswerScale cluster_scale(const Comm& world, const Precision& precision) {
  const double link = 100e6 / 8;  // bytes/s each way
  const InterNode nodes{4};
  AnswerScale a = answer_scale("2 nodes x 4 ranks, 100 Mbit/s", "2 nodes", "predicted",
                               1024.0 * 1024.0, "MiB", kClusterBatch);
  Calibration cal;
  for (const NamedRun& run : cluster_runs(cluster_model(), kClusterBatch)) {
    cal = calibrate_run(world, run.options, precision, &cal, std::size_t(256) << 10);
    const Prediction p =
        predict(run.options, precision, over_link(measured_machine(cal), run.options, nodes, link));
    const AnswerRow r = predicted_row(run.name, run.options, p, precision, nodes);
    a.node_flop_per_byte = nodes.ranks_per_node * cal.gemm_flops / link;
    if (run.options.zero.stage == 3)
      a.zero3 = r;
    else if (a.best.run.empty() || r.step_s < a.best.step_s) {
      a.best = r;
      a.model_parallel = run.options.mesh.tp * run.options.mesh.pp;
    }
  }
  return a;
}

// The last scale: GPT-3 175B on a DGX A100 cluster, as examples/gpt3_175b.hpp's table.
inline AnswerScale gpt3_scale() {
  const ClusterSpec cluster;
  const Machine a100 = cluster_machine(cluster, "DGX A100 cluster");
  const ModelSpec m = preset("gpt3-175b");
  AnswerScale a =
      answer_scale("GPT-3 175B, 1024 A100s", "GPT-3 175B", "predicted", 1e9, "GB", 2048);
  a.node_flop_per_byte = cluster.peak_flops * cluster.efficiency / cluster.inter_node_bw;
  const InterNode nodes{cluster.gpus_per_node};
  for (const auto& [name, mesh, zero] :
       {std::tuple{"ZeRO-3 DP1024", MeshShape{1, 1, 1024}, 3},
        std::tuple{"TP8-PP16-DP8 ZeRO-1", MeshShape{8, 16, 8}, 1}}) {
    gpt2::Options o;
    o.model = {m.vocab, m.seq, m.layers, m.hidden, m.heads};
    o.mesh = mesh;
    o.zero.stage = zero;
    o.batch = a.batch;
    o.microbatches = a.batch / mesh.dp;  // b = 1
    o.recompute = Recompute::full;
    const AnswerRow r =
        predicted_row(name, o, predict(o, Precision::mixed(), a100), Precision::mixed(), nodes);
    (zero == 3 ? a.zero3 : a.best) = r;
  }
  a.model_parallel = 8 * 16;
  return a;
}

inline void print_answer_row(const AnswerScale& a, const AnswerRow& r, const char* tag) {
  char across[16] = "-";
  if (r.across >= 0) std::snprintf(across, sizeof across, "%.1f", r.across / a.unit);
  std::printf("  %-22s%-8s %-4s %7.1f %7.1f %7.1f %8.1f %8s %8.2f\n", r.run.c_str(), tag,
              a.unit_name, r.states / a.unit, r.activations / a.unit,
              (r.states + r.activations) / a.unit, r.sent / a.unit, across, r.step_s);
}

inline void print_answer(const std::vector<AnswerScale>& scales) {
  std::printf(
      "\nTHE ANSWER, at three scales: pure ZeRO-3 next to the best 3D layout (memory of the most\n"
      "loaded rank; bytes per rank per step)\n");
  std::printf("  %-30s %-4s %7s %7s %7s %8s %8s %8s\n", "run", "unit", "states", "activ.", "total",
              "sent", "across", "step s");
  for (const AnswerScale& a : scales) {
    std::printf("%s (%s)\n", a.name.c_str(), a.how.c_str());
    print_answer_row(a, a.zero3, "");
    print_answer_row(a, a.best, "best 3D");
  }
  std::printf(
      "sent: the buffers of a rank's calls (the report's convention); across: what a rank sends\n"
      "  over the links between nodes, on the wire (MPICH's algorithms, "
      "costmodel/inter_node.hpp)\n");
  std::printf("\nwhy, in numbers:\n");
  for (const AnswerScale& a : scales) {
    std::printf(
        "  %s: ZeRO-3 holds %.2fx the model state of the best 3D layout, %.2fx its\n"
        "    activations, and sends %.1fx its bytes; pure DP spreads a step's %d sequences over "
        "at\n"
        "    most %d ranks, the best 3D layout (TP x PP = %d) over %d\n",
        a.name.c_str(), a.zero3.states / a.best.states, a.zero3.activations / a.best.activations,
        a.zero3.sent / a.best.sent, a.batch, a.batch, a.model_parallel, a.batch * a.model_parallel);
    if (a.node_flop_per_byte <= 0 || a.zero3.across <= 0) continue;
    const double intensity = a.zero3.flops / a.zero3.across;
    std::printf(
        "    ZeRO-3 computes %.0f FLOP per byte it sends across nodes; a node computes %.0f per\n"
        "    byte of its link: %s\n",
        intensity, a.node_flop_per_byte,
        intensity >= a.node_flop_per_byte
            ? "its traffic can hide behind its compute (if prefetched)"
            : "its traffic cannot hide behind its compute, however well overlapped");
  }
}

// The answer's traffic as a picture: at each scale, the bytes a rank of ZeRO-3 and of the best 3D
// layout sends per step on the wire, by axis, inside a node (light) and across nodes (dark), in %
// of that scale's ZeRO-3 (whose bytes the notes give).
inline io::BarChart answer_traffic_chart(const std::vector<AnswerScale>& scales) {
  io::BarChart c;
  c.title = "Bytes a rank sends per step on the wire, by axis: inside a node, across nodes";
  c.unit = "% of ZeRO-3's bytes at the same scale";
  const char* axes[] = {"TP", "PP", "DP", "embedding"};
  double AxisFigures::*of[] = {&AxisFigures::tp, &AxisFigures::pp, &AxisFigures::dp,
                               &AxisFigures::emb};
  const double hues[] = {210, 140, 30, 300};
  for (int across = 0; across < 2; ++across)
    for (int k = 0; k < 4; ++k)
      c.series.push_back({std::string(axes[k]) + (across ? " across nodes" : " inside a node"),
                          pp::detail::hsl(hues[k], 0.6, across ? 0.35 : 0.75),
                          {}});
  c.notes.push_back("100% is ZeRO-3's bytes per rank per step on the wire: the runs' formulas as");
  c.notes.push_back("MPICH's algorithms move their bytes (costmodel/inter_node.hpp)");
  for (const AnswerScale& a : scales) {
    const double whole = a.zero3.wire.total();
    for (const AnswerRow* r : {&a.zero3, &a.best}) {
      const std::size_t cut = r->run.find(" ZeRO-1");
      c.labels.push_back(cut == std::string::npos ? r->run : r->run.substr(0, cut));
      c.sublabels.push_back(a.label);
      for (int k = 0; k < 4; ++k) {
        const double all = r->wire.*of[k], across = std::max(0.0, r->wire_across.*of[k]);
        c.series[std::size_t(k)].values.push_back(100 * (all - across) / whole);
        c.series[std::size_t(4 + k)].values.push_back(100 * across / whole);
      }
    }
    char note[160];
    std::snprintf(note, sizeof note, "  %s: %.4g %s, the best 3D layout's %.0f%% of it",
                  a.name.c_str(), whole / a.unit, a.unit_name, 100 * a.best.wire.total() / whole);
    c.notes.push_back(note);
  }
  return c;
}

// The picture written to `path`, its notes printed.
inline void write_answer_chart(const std::vector<AnswerScale>& scales, const std::string& path) {
  const io::BarChart chart = answer_traffic_chart(scales);
  io::write_bar_chart_svg(path, chart);
  std::printf("\nwrote %s, noting under its legend:\n", path.c_str());
  for (const std::string& note : chart.notes) print_wrapped("  %s\n", note.c_str());
}

}  // namespace trident::examples
