// trident/costmodel/layout_calibration.hpp: this machine's rates for the many layouts --layout
// auto predicts (layout.hpp), each measurement taken once and kept per machine and build.
//
// The compute rates are measured once per (TP, CP, split, SP) at one sequence per microbatch and
// scaled by the sequences a microbatch holds (a layer's other kernels and the loss are linear in
// them); each call (operation, group size) once, the loop's after 5 ms of compute. On two nodes
// the link between them is measured (inter_node.hpp) and every call whose groups cross it priced
// on it. Every measurement comes from the cache file when this machine and build took it before
// (io/calibration_cache.hpp).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../io/calibration_cache.hpp"
#include "inter_node.hpp"
#include "measured.hpp"

namespace trident::costmodel {

// This machine's rates for many layouts (see the top of the file), each measurement taken from
// `cache` when there, else measured and added to it. Collective: every rank must ask for the
// same layouts in the same order.
class LayoutCalibration {
 public:
  // Collective: on two nodes, the link (at TRIDENT_LINK_BPS, cmake/cluster.sh's, or 1 Gbit/s
  // nominal).
  LayoutCalibration(const Comm& world, CalibrationCache& cache)
      : cache_(cache), nodes_{node_comm(world).size()} {
    nodes_count_ = world.size() / nodes_.ranks_per_node;
    if (nodes_count_ != 2) return;
    const char* bps = std::getenv("TRIDENT_LINK_BPS");
    const double nominal = (bps ? std::atof(bps) : 1e9) / 8;
    const std::string what = "link " + number(nominal);
    if (auto v = cache_.find(what, 1)) {
      link_ = v->front();
      return;
    }
    link_ = measure_link(world, nodes_, nominal).bandwidth;
    cache_.put(what, {link_});
  }
  int nodes() const { return nodes_count_; }

  Machine machine(const Comm& world, const gpt2::Options& o) {
    LayerShape shape = layer_shape(o);
    const int sequences = shape.B;
    const auto key = std::make_tuple(o.mesh.tp, o.mesh.cp, int(o.cp_split), shape.n < shape.N());
    if (!compute_.count(key)) {
      LayerShape one = shape;
      one.B = 1;
      one.n = shape.n / sequences;
      compute_[key] = compute(world, one);
    }
    Calibration c = compute_.at(key);
    c.layer_kernels_s *= sequences;
    c.head_kernels_s *= sequences;
    calls(world, calls_, after_calls(o), c.gemm_flops, 0);
    calls(world, loop_calls_, loop_calls(o), c.gemm_flops, kGap);
    c.calls = calls_;
    c.loop_calls = loop_calls_;
    c.gap_s = kGap;
    return link_ > 0 ? over_link(measured_machine(c), o, nodes_, link_) : measured_machine(c);
  }

 private:
  static std::string number(double x) {
    char s[32];
    std::snprintf(s, sizeof s, "%.17g", x);
    return s;
  }
  Calibration compute(const Comm& world, const LayerShape& one) {
    std::string what = "compute";
    for (int x : {one.B, one.seq, one.C, one.Cl, one.Hl, one.D, one.n, one.vocab_rows, one.cp,
                  int(one.split)})
      what += " " + std::to_string(x);
    Calibration c;
    if (auto v = cache_.find(what, 6)) {
      c.ranks = int((*v)[0]);
      c.gemm_flops = (*v)[1];
      c.layer_kernels_s = (*v)[2];
      c.head_kernels_s = (*v)[3];
      c.fill_bytes = (*v)[4];
      c.adamw_rate = (*v)[5];
      return c;
    }
    c = calibrate_compute(world, one);
    cache_.put(what, {double(c.ranks), c.gemm_flops, c.layer_kernels_s, c.head_kernels_s,
                      c.fill_bytes, c.adamw_rate});
    return c;
  }
  // measure_calls for those of `ops` neither known nor in the cache.
  void calls(const Comm& world, Calibration::Calls& known,
             const std::vector<std::pair<CommOp, int>>& ops, double gemm_flops, double work_s) {
    const auto what = [&](CommOp op, int group) {
      return std::string("call ") + to_string(op) + " " + std::to_string(group) + " " +
             number(work_s);
    };
    for (const auto& [op, group] : ops)
      if (!known.count({op, group}))
        if (auto v = cache_.find(what(op, group), 2)) known[{op, group}] = {(*v)[0], (*v)[1]};
    const Calibration::Calls before = known;
    measure_calls(world, known, ops, gemm_flops, work_s);
    for (const auto& [call, fit] : known)
      if (!before.count(call))
        cache_.put(what(call.first, call.second), {fit.latency, fit.bandwidth});
  }

  static constexpr double kGap = 0.005;
  CalibrationCache& cache_;
  InterNode nodes_;
  int nodes_count_ = 1;
  double link_ = 0;  // bytes/s each way between two nodes, as MPI gets it
  std::map<std::tuple<int, int, int, bool>, Calibration> compute_;
  Calibration::Calls calls_, loop_calls_;
};

}  // namespace trident::costmodel
