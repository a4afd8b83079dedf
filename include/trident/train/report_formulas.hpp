// trident/train/report_formulas.hpp: the run report's formulas as their forms, in the papers'
// notation, with their inputs: what the text report (report_text.hpp) and the JSON
// (io/run_json.hpp) print next to each value, so that a reader can check it without the source.
//  - model states per rank: ZeRO §5.1 (Rajbhandari et al. 2020), 2Ψ + 2Ψ + KΨ with the stage's
//    terms divided by Nd, in the run's bytes per element;
//  - the pipeline bubble: each schedule's form and source from its traits
//    (pp/schedule_traits.hpp);
//  - TP: the model's declared calls of b·s·h per layer and microbatch (Megatron-LM §3;
//    formulas.hpp's tp_calls_per_layer).
#pragma once

#include <cmath>
#include <string>

#include "formulas.hpp"

namespace trident {

// The ZeRO paper's per-rank model states (§5.1) as a form in bytes per element, the terms the
// policy shards divided by Nd: stage 0 2Psi + 2Psi + K Psi, 1: ... + K Psi/Nd,
// 2: 2Psi + (2 + K) Psi/Nd, 3: (2 + 2 + K) Psi/Nd.
inline std::string zero_states_form(const ZeroPolicy& zero, const plan::Precision& p) {
  std::string whole, sharded;  // "2Ψ + 2Ψ + ", "2 + 12"
  int parts = 0;               // of sharded
  const auto add = [&](double bytes, bool shards) {
    const std::string n = std::to_string(int(bytes));
    if (shards)
      sharded += (parts++ ? " + " : "") + n;
    else
      whole += n + "Ψ + ";
  };
  add(p.param_bytes, zero.shards_parameters());
  add(p.grad_bytes, zero.shards_gradients());
  add(p.optimizer_bytes, zero.shards_optimizer());
  if (parts == 0) return whole.substr(0, whole.size() - 3);  // without the last " + "
  return whole + (parts > 1 ? "(" + sharded + ")" : sharded) + "Ψ/Nd";
}

// The bubble's formula for the run's schedule (its traits, pp/schedule_traits.hpp): its form,
// the fraction with p, m (and v) put in ("1/5"; empty when the form's numerator is not p-1, as
// ZB-V's max), and where it comes from.
struct BubbleForm {
  std::string form, fraction, source;
};
inline BubbleForm bubble_form(const TrainOptions& o) {
  const pp::ScheduleTraits& t = pp::traits(o.schedule);
  const int p = o.mesh.pp;
  BubbleForm f{t.bubble_form, "", t.bubble_source};
  const double share = t.bubble_share(p, o.microbatches, o.virtual_stages);
  if (f.form.rfind("(p-1)/", 0) == 0 && share > 0)  // (p-1) / its denominator, a whole number
    f.fraction = std::to_string(p - 1) + "/" + std::to_string(std::lround((p - 1) / share));
  return f;
}

}  // namespace trident
