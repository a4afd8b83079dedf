// trident/train/report_formulas.hpp: the run report's formulas as their forms, in the papers'
// notation, with their inputs: what the text report (report_text.hpp) and the JSON
// (io/run_json.hpp) print next to each value, so that a reader can check it without the source.
//  - model states per rank: ZeRO §5.1 (Rajbhandari et al. 2020), 2Ψ + 2Ψ + KΨ with the stage's
//    terms divided by Nd, in the run's bytes per element;
//  - the pipeline bubble: (p-1)/(m+p-1) (GPipe, Huang et al. 2019; 1F1B), (p-1)/(v m+p-1)
//    (interleaved, Narayanan et al. 2021), (p-1)/(3m+p-1) (ZB-H1 with F = B = W, Qi et al.
//    2023), idle/(3m+idle) with idle = max((p-1)/2, 2p-1-m) (ZB-V as simulated here);
//  - TP: the model's declared calls of b·s·h per layer and microbatch (Megatron-LM §3;
//    formulas.hpp's tp_calls_per_layer).
#pragma once

#include <string>

#include "formulas.hpp"

namespace trident {

// The ZeRO paper's per-rank model states (§5.1) as a form in bytes per element: stage 0
// 2Psi + 2Psi + K Psi, 1: ... + K Psi/Nd, 2: 2Psi + (2 + K) Psi/Nd, 3: (2 + 2 + K) Psi/Nd.
inline std::string zero_states_form(int stage, const plan::Precision& p) {
  auto b = [](double bytes) { return std::to_string(int(bytes)); };
  const std::string P = b(p.param_bytes), G = b(p.grad_bytes), K = b(p.optimizer_bytes);
  if (stage == 0) return P + "Ψ + " + G + "Ψ + " + K + "Ψ";
  if (stage == 1) return P + "Ψ + " + G + "Ψ + " + K + "Ψ/Nd";
  if (stage == 2) return P + "Ψ + (" + G + " + " + K + ")Ψ/Nd";
  return "(" + P + " + " + G + " + " + K + ")Ψ/Nd";
}

// The bubble's formula for the run's schedule: its form, the fraction with p, m (and v) put in
// ("1/5"; empty for ZB-V, whose idle time is a max), and where it comes from.
struct BubbleForm {
  std::string form, fraction, source;
};
inline BubbleForm bubble_form(const TrainOptions& o) {
  const int p = o.mesh.pp, m = o.microbatches, v = o.virtual_stages;
  auto over = [](int a, int b) { return std::to_string(a) + "/" + std::to_string(b); };
  switch (o.schedule) {
    case pp::ScheduleKind::zb_h1:
      return {"(p-1)/(3m+p-1)", over(p - 1, 3 * m + p - 1), "Qi et al. 2023, F = B = W"};
    case pp::ScheduleKind::zbv:
      return {"idle/(3m+idle), idle = max((p-1)/2, 2p-1-m)", "",
              "the simulated ZB-V, F = B = W (Qi et al. 2024: 0)"};
    default:
      if (v > 1)
        return {"(p-1)/(v m+p-1)", over(p - 1, v * m + p - 1), "Narayanan et al. 2021 §2.2"};
      return {"(p-1)/(m+p-1)", over(p - 1, m + p - 1), "Huang et al. 2019 (GPipe)"};
  }
}

}  // namespace trident
