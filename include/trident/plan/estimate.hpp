// trident/plan/estimate.hpp: the cost model's prediction for one configuration.
//
// estimate() puts the terms of memory.hpp, communication.hpp and compute.hpp together for one
// Config on one cluster: memory per GPU by kind, bytes per GPU per axis, which axes cross
// nodes, and the step time in parts. Nothing overlaps in this model: TP's all-reduces sit
// between a layer's GEMMs (Megatron-LM §3), the pipeline's sends between its stages, and DP's
// reductions are counted as if after the backward. Megatron-LM and DeepSpeed hide part of the DP
// reduction behind the backward, so step_s is an upper bound and overlapped_step_s() a lower one.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cluster.hpp"
#include "communication.hpp"
#include "compute.hpp"
#include "config.hpp"
#include "memory.hpp"
#include "model_spec.hpp"

namespace trident::plan {

struct Estimate {
  std::int64_t shard_parameters = 0;              // Psi: parameters of one model-parallel shard
  MemoryBytes memory;                             // per GPU, on the most loaded pipeline stage
  AxisBytes comm_bytes;                           // sent per GPU per step
  CrossesNodes crosses_nodes;                     // which axes run over the inter-node links
  double flops = 0;                               // per step, all GPUs, recomputation included
  double bubble_share = 0;                        // pipeline bubble / step (the report's)
  double compute_s = 0;                           // ideal: flops / (gpus x peak x efficiency)
  double bubble_s = 0;                            // compute_s x bubble / ideal time
  double tp_s = 0, pp_s = 0, dp_s = 0, cp_s = 0;  // bytes / bandwidth of the axis's links
  double step_s = 0;                              // compute, bubble and the four above
  bool fits = false;                              // memory.total() <= the GPU's memory

  double comm_s() const { return tp_s + pp_s + dp_s + cp_s; }
  // If DP's reductions and CP's ring (its blocks travel while the previous one is computed,
  // Liu et al. 2023) hid entirely behind the computation.
  double overlapped_step_s() const {
    return std::max(compute_s + bubble_s, dp_s + cp_s) + tp_s + pp_s;
  }
};

// Compute time of the step's FLOPs spread evenly over the GPUs.
inline double compute_seconds(double flops, const ClusterSpec& cluster) {
  return flops / (cluster.gpus * cluster.peak_flops * cluster.efficiency);
}

// Throws Error when `c` is not a valid configuration (see invalid_reason()).
inline Estimate estimate(const ModelSpec& m, const ClusterSpec& cluster, const Config& c,
                         const Precision& p) {
  validate(m);
  validate(cluster);
  validate(m, cluster, c);
  Estimate e;
  e.shard_parameters = shard_parameters(m, c.tp, c.pp);
  e.memory = memory_bytes(m, c, p);
  e.comm_bytes = comm_bytes(m, c, p);
  e.crosses_nodes = crosses_nodes(cluster, c);
  e.flops = training_flops(m, c.global_batch(), c.recompute);
  e.bubble_share = bubble_share(c);
  e.compute_s = compute_seconds(e.flops, cluster);
  e.bubble_s = e.compute_s * bubble_over_ideal(c);
  e.tp_s = e.comm_bytes.tp / link_bandwidth(cluster, e.crosses_nodes.tp);
  e.pp_s = e.comm_bytes.pp / link_bandwidth(cluster, e.crosses_nodes.pp);
  e.dp_s = e.comm_bytes.dp / link_bandwidth(cluster, e.crosses_nodes.dp);
  e.cp_s = e.comm_bytes.cp / link_bandwidth(cluster, e.crosses_nodes.cp);
  e.step_s = e.compute_s + e.bubble_s + e.comm_s();
  e.fits = e.memory.total() <= cluster.memory_bytes;
  return e;
}

}  // namespace trident::plan
