// trident/costmodel/machine.hpp: what the cost model computes a step's time on — this machine,
// its rates and calls measured (calibrate.hpp), or a cluster's datasheet (plan/cluster.hpp),
// whose links are priced as rings (plan/formulas.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "../plan/communication.hpp"
#include "../plan/formulas.hpp"
#include "calibrate.hpp"

namespace trident::costmodel {

// the paper planner's formulas, shapes and presets, which this model builds on
using namespace plan;

// What the step time is computed on: measured rates and fits, or a cluster's datasheet.
struct Machine {
  std::string name;
  double gemm_flops = 0;  // per rank
  // per microbatch: a layer's and the loss's other kernels (calibrate.hpp); 0 for a cluster,
  // where they are fused next to the GEMMs and only GEMM FLOPs count (Narayanan et al. 2021)
  double layer_kernels_s = 0, head_kernels_s = 0;
  double fill_bytes = 0;  // zero-filled buffers, bytes/s (0: free)
  double adamw_rate = 0;  // element updates/s (0: free)
  std::optional<Calibration> measured;
  ClusterSpec cluster{};  // links, when not measured

  // Seconds of calls started together and then waited for (one latency), each moving `bytes`
  // (CommStats' convention) over `group` ranks; CommOp::send: point-to-point messages. in_loop:
  // the calls come between the microbatch loop's compute (calibrate.hpp's loop_calls).
  double seconds(CommOp op, int group, const std::vector<double>& bytes, bool crosses_nodes,
                 bool in_loop = false) const {
    if (group < 2 || bytes.empty()) return 0;
    double total = 0;
    for (double b : bytes) total += b;
    if (measured) {
      const LinearFit f = measured->call(op, group, in_loop);
      return f.latency + (f.bandwidth > 0 ? total / f.bandwidth : 0);
    }
    const double bw = link_bandwidth(cluster, crosses_nodes);
    if (op == CommOp::send) return total / bw;
    if (op == CommOp::all_reduce) return ring_all_reduce_bytes(total, group) / bw;
    return ring_gather_bytes(total, group) / bw;  // reduce-scatter, all-gather
  }
  // One call.
  double seconds(CommOp op, int group, double bytes, bool crosses_nodes,
                 bool in_loop = false) const {
    return seconds(op, group, std::vector<double>{bytes}, crosses_nodes, in_loop);
  }
};

inline Machine measured_machine(const Calibration& c) {
  Machine m;
  m.name = "this machine, measured with " + std::to_string(c.ranks) + " ranks at once";
  m.gemm_flops = c.gemm_flops;
  m.fill_bytes = c.fill_bytes;
  m.adamw_rate = c.adamw_rate;
  m.layer_kernels_s = c.layer_kernels_s;
  m.head_kernels_s = c.head_kernels_s;
  m.measured = c;
  return m;
}

// GEMMs at peak x efficiency; buffer fills and AdamW not counted (fused, next to the GEMMs).
inline Machine cluster_machine(const ClusterSpec& c, std::string name) {
  Machine m;
  m.name = std::move(name);
  m.gemm_flops = c.peak_flops * c.efficiency;
  m.cluster = c;
  return m;
}

}  // namespace trident::costmodel
