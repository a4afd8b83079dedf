// trident/plan/cluster.hpp: the machine a plan is for, and the bytes each number takes.
//
// ClusterSpec is what the cost model knows of the hardware: GPUs, how many share a node (and
// its fast links), memory per GPU, the bandwidth of a link inside a node and between nodes,
// and the compute rate. Its defaults are an NVIDIA DGX A100 cluster, the machine of Narayanan
// et al. 2021. Precision is the bytes per parameter, gradient, optimizer state and activation:
// ZeRO's mixed-precision Adam (2, 2, K = 12) or plain fp32 Adam (4, 4, 8).
#pragma once

#include <string>

#include "../core/error.hpp"

namespace trident::plan {

struct ClusterSpec {
  int gpus = 1024;
  int gpus_per_node = 8;  // a DGX A100 node
  // A100 80GB: 80 GiB of HBM; we count 80e9 bytes, a little head room for the CUDA context.
  double memory_bytes = 80e9;
  // Bytes per second one GPU sends while all send at once, one direction. Inside a node:
  // third-generation NVLink, 600 GB/s per GPU both directions together (A100 datasheet).
  double intra_node_bw = 300e9;
  // Between nodes: one 200 Gb/s HDR InfiniBand adapter per GPU in a DGX A100.
  double inter_node_bw = 25e9;
  // Dense BF16/FP16 tensor-core peak of an A100 (datasheet).
  double peak_flops = 312e12;
  // Fraction of the peak the model's GEMMs reach. A guess to calibrate: Narayanan et al. 2021
  // (Table 1) measured 44-52% of peak end to end, bubbles and communication included, so the
  // GEMMs alone run somewhat faster. It does not depend on GEMM shape here, so the planner
  // prefers small microbatches (fewer bubbles) whenever they fit.
  double efficiency = 0.6;
};

inline void validate(const ClusterSpec& c) {
  if (c.gpus < 1 || c.gpus_per_node < 1)
    fail("cluster: gpus and gpus per node must be at least 1, got " + std::to_string(c.gpus) +
         " and " + std::to_string(c.gpus_per_node));
  if (!(c.memory_bytes > 0 && c.intra_node_bw > 0 && c.inter_node_bw > 0 && c.peak_flops > 0 &&
        c.efficiency > 0 && c.efficiency <= 1))
    fail("cluster: memory, bandwidths and peak FLOP/s must be positive and efficiency in (0, 1]");
}

// Bytes per element. ZeRO (Rajbhandari et al. 2020, §3.1) counts mixed-precision Adam as
// 2 Psi (fp16 parameters) + 2 Psi (fp16 gradients) + K Psi with K = 12 (fp32 copy of the
// parameters, momentum, variance). Activations are 16-bit there, as in Korthikanti et al. 2022.
struct Precision {
  std::string name;
  double param_bytes = 2;
  double grad_bytes = 2;
  double optimizer_bytes = 12;  // K
  double activation_bytes = 2;

  static Precision mixed() { return {"mixed", 2, 2, 12, 2}; }
  static Precision fp32() { return {"fp32", 4, 4, 8, 4}; }  // parameters, gradients, m and v
  static Precision parse(const std::string& name) {
    if (name == "mixed") return mixed();
    if (name == "fp32") return fp32();
    fail("unknown precision '" + name + "' (known: mixed, fp32)");
  }
};

}  // namespace trident::plan
