// examples/gpt3_175b.hpp: zero_vs_3d's last table — the cost model's formulas
// (costmodel/predict.hpp) for GPT-3 175B on 1024 A100s, 8 per node: pure ZeRO-3 next to 3D meshes
// with ZeRO-1, each figure of the pipeline stage where it is largest.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <trident/costmodel/predict.hpp>
#include <trident/models/gpt2/gpt2.hpp>

#include "comparison.hpp"

namespace trident::examples {

using namespace trident::costmodel;

// Each figure of the pipeline stage where it is largest.
inline StagePrediction largest_of_stages(const Prediction& p) {
  StagePrediction most;
  for (const StagePrediction& t : p.stages) {
    most.activations = std::max(most.activations, t.activations);
    if (t.states.total() > most.states.total()) most.states = t.states;
    most.compute_s = std::max(most.compute_s, t.compute_s);
    for (auto axis : {&AxisFigures::tp, &AxisFigures::pp, &AxisFigures::dp}) {
      most.bytes.*axis = std::max(most.bytes.*axis, t.bytes.*axis);
      most.seconds.*axis = std::max(most.seconds.*axis, t.seconds.*axis);
    }
  }
  return most;
}

inline void print_gpt3_header(const ModelSpec& m, const ClusterSpec& cluster, int batch) {
  print_wrapped(
      "\nThe same formulas for %s (%.4g parameters) on %d A100s, %d per node (%.0f GB/s inside a "
      "node, %.0f between), global batch %d, b = 1, full recomputation, 2+2+12 bytes per "
      "parameter, 16-bit activations; GEMMs at %.0f%% of %.0f TFLOP/s. Bytes as CommStats counts "
      "them (each call's buffer); seconds send them over a ring, 2(n-1)/n per all-reduce:\n",
      m.name.c_str(), double(parameter_count(m)), cluster.gpus, cluster.gpus_per_node,
      cluster.intra_node_bw / 1e9, cluster.inter_node_bw / 1e9, batch, 100 * cluster.efficiency,
      cluster.peak_flops / 1e12);
  std::printf("%-20s | %8s %8s | %9s %9s %9s | %7s %6s %6s %6s %6s %6s\n", "run", "states", "activ",
              "TP", "PP", "DP", "compute", "bubble", "TP", "PP", "DP", "step");
  std::printf("%-20s | %17s | %29s | %s\n", "", "GB per GPU",
              "GB per GPU per step (*: across nodes)", "seconds per step");
  std::printf("(each figure of the pipeline stage where it is largest)\n");
}

inline void print_gpt3_row(const char* name, const Prediction& p, const StagePrediction& most) {
  const CrossesNodes& x = p.crosses;
  auto gb = [](double v, bool crosses) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f%s", v / 1e9, crosses ? "*" : " ");
    return std::string(text);
  };
  std::printf("%-20s | %8.1f %8.1f | %9s %9s %9s | %7.1f %5.1f%% %6.1f %6.2f %6.1f %6.1f\n", name,
              most.states.total() / 1e9, most.activations / 1e9, gb(most.bytes.tp, x.tp).c_str(),
              gb(most.bytes.pp, x.pp).c_str(), gb(most.bytes.dp, x.dp).c_str(), most.compute_s,
              100 * p.bubble_formula, most.seconds.tp, most.seconds.pp, most.seconds.dp, p.step_s);
}

inline void print_gpt3() {
  const ClusterSpec cluster;  // DGX A100: 8 GPUs per node, 300 GB/s NVLink, 25 GB/s InfiniBand
  const Machine a100 = cluster_machine(cluster, "DGX A100 cluster");
  const ModelSpec m = preset("gpt3-175b");
  struct Shape {
    const char* name;
    MeshShape mesh;
    int zero;
  };
  const Shape shapes[] = {{"ZeRO-3 DP1024", {1, 1, 1024}, 3},
                          {"TP8-PP16-DP8 ZeRO-1", {8, 16, 8}, 1},
                          {"TP16-PP8-DP8 ZeRO-1", {16, 8, 8}, 1},
                          {"TP8-DP128 ZeRO-3", {8, 1, 128}, 3}};
  const int batch = 2048;
  print_gpt3_header(m, cluster, batch);
  std::vector<Prediction> rows;
  std::vector<StagePrediction> mosts;
  for (const Shape& sh : shapes) {
    gpt2::Options o;
    o.model = {m.vocab, m.seq, m.layers, m.hidden, m.heads};
    o.mesh = sh.mesh;
    o.zero.stage = sh.zero;
    o.batch = batch;
    o.microbatches = batch / sh.mesh.dp;  // b = 1
    o.recompute = Recompute::full;
    rows.push_back(predict(o, Precision::mixed(), a100));
    mosts.push_back(largest_of_stages(rows.back()));
    print_gpt3_row(sh.name, rows.back(), mosts.back());
  }
  const StagePrediction& best = mosts[1];
  const double tp_inside = best.seconds.tp;
  const double tp_across = tp_inside * cluster.intra_node_bw / cluster.inter_node_bw;
  print_wrapped(
      "\nTP's all-reduces move %.0f GB per GPU per step: %.1f s over NVLink inside a node, %.0f s "
      "if the same group crossed nodes (as TP16 does). PP sends only %.1f GB per GPU per step "
      "across nodes (%.2f s); its price is the bubble, %.1f%%. Pure ZeRO-3 gathers and "
      "reduce-scatters the whole model per microbatch over the network: %.0f GB per GPU per step, "
      "%.0f s against %.0f s for TP8-PP16-DP8.\n",
      best.bytes.tp / 1e9, tp_inside, tp_across, best.bytes.pp / 1e9, best.seconds.pp,
      100 * rows[1].bubble_formula, mosts[0].bytes.dp / 1e9, rows[0].step_s, rows[1].step_s);
}

}  // namespace trident::examples
