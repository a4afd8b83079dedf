// trident/train/mfu.hpp: model FLOPs utilization (MFU; Chowdhery et al. 2022, "PaLM", App. B):
// the FLOPs the model needs per token times the tokens trained per second, over the peak FLOP/s
// of the hardware the run is on.
//
// The model's FLOPs per token are 3x its forward's GEMM FLOPs (a backward makes two products for
// each of the forward's), from the model's stage costs (pp::StageCosts: a layer, the embedding
// and the LM head per sequence; nn/flops.hpp, Narayanan et al. 2021 §5.1 for GPT-2). Recomputed
// forwards are not counted: MFU counts the model's work, not the hardware's. The peak is the
// hardware's: on a GPU its datasheet's dense peak for the run's precision, on a CPU the GEMM
// rate measured on this machine with every rank multiplying at once (io/hardware_peak.hpp).
#pragma once

#include <cmath>
#include <string>

#include "../pp/balance.hpp"

namespace trident {

// 3 (L layer + embedding + head) / s, from the model's forward FLOPs per sequence of s tokens.
template <class M>
double model_flops_per_token(const M& model) {
  const pp::StageCosts c = model.stage_costs();
  return 3 * (model.layers() * c.layer + c.embedding + c.head) / model.seq();
}

// The peak FLOP/s of all the hardware a run uses, and where the figure comes from.
struct HardwarePeak {
  double flops = 0;  // all devices (or all ranks' shares of the CPU) together; 0: unknown
  double per_device = 0;
  int devices = 0;     // GPUs, or ranks (each rank's share of the CPU)
  std::string source;  // "measured: ..." or "datasheet: ..."; why, when unknown
};

// A GPU's dense datasheet peak (no structured sparsity), FLOP/s, for the run's precision: "bf16"
// against the BF16 tensor cores (as the PyTorch peer is held to), else the compute type's (4
// bytes: FP32 without TF32, as backend/cuda/gemm.hpp multiplies; 8 bytes: FP64 tensor cores).
// 0 when `device` (its name, e.g. "cuda:0 (NVIDIA H200)") is not in the table.
inline double datasheet_peak_flops(const std::string& device, const std::string& precision,
                                   int compute_bytes) {
  struct Row {
    const char* name;  // a part of the device's name; the first row that matches
    double bf16, fp32, fp64;
  };
  // NVIDIA's datasheets: H200 SXM and H100 SXM 989 / 67 / 67 TFLOP/s, H100 PCIe 756 / 51 / 51,
  // A100 312 / 19.5 / 19.5
  static const Row table[] = {{"H200", 989e12, 67e12, 67e12},
                              {"H100 PCIe", 756e12, 51e12, 51e12},
                              {"H100", 989e12, 67e12, 67e12},
                              {"A100", 312e12, 19.5e12, 19.5e12}};
  for (const Row& r : table)
    if (device.find(r.name) != std::string::npos)
      return precision == "bf16" ? r.bf16 : compute_bytes == 8 ? r.fp64 : r.fp32;
  return 0;
}

// MFU: flops_per_token x tokens_per_s / peak; NaN when either is unknown.
inline double model_flops_utilization(double flops_per_token, double tokens_per_s,
                                      const HardwarePeak& peak) {
  if (!(peak.flops > 0) || !std::isfinite(tokens_per_s)) return std::nan("");
  return flops_per_token * tokens_per_s / peak.flops;
}

}  // namespace trident
