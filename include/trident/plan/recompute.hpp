// trident/plan/recompute.hpp: activation recomputation, one name for the planner and the trainer.
//
// Korthikanti et al. 2022, §5: none; selective (only the attention core softmax(QK^T)V is
// recomputed); full (each layer's forward is rerun from its input in the backward). The planner
// weighs all three and the trainer runs all three (`--recompute none|selective|full`;
// selective: model/decoder_stage.hpp, cp/attention.hpp's attention_probabilities).
#pragma once

#include <string>

#include "../core/error.hpp"

// In namespace trident: the planner (trident::plan), the trainer's options and the stages
// name it alike.
namespace trident {

enum class Recompute { none, selective, full };

inline const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
  }
  return "?";
}

inline Recompute parse_recompute(const std::string& name) {
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full})
    if (name == to_string(r)) return r;
  fail("unknown recompute '" + name + "' (known: none, selective, full)");
}

}  // namespace trident
