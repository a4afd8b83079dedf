// trident/train/parameter_update.hpp: the update that ends a step (ARCHITECTURE §2, step 5):
// AdamW (Loshchilov & Hutter 2019) on what each rank owns, the gradients clipped to the global
// norm, or no update when the step's loss or gradient norm is not finite.
//
// Both values are all-reduced, so every rank takes the same branch: one Error naming the step,
// or, with skip_nonfinite, a skipped step whose parameters and moments stay as they were. Either
// way each store ends its step (zero/unit_store.hpp).
#pragma once

#include <cmath>
#include <string>

#include "../core/error.hpp"
#include "../zero/optimizer.hpp"
#include "options.hpp"

namespace trident {

// AdamW step t (1-based: the step index is t - 1) at learning rate lr on every chunk's store,
// chunks[c] being this rank's chunk c; false when the step is skipped (non-finite).
template <class Chunks>
bool update_parameters(Chunks& chunks, const TrainOptions& o, int t, double lr, double loss,
                       double grad_norm) {
  const bool finite = std::isfinite(loss) && std::isfinite(grad_norm);
  if (!finite && !o.skip_nonfinite)
    fail("step " + std::to_string(t - 1) + ": the loss is " + std::to_string(loss) +
         " and the gradient norm " + std::to_string(grad_norm) +
         "; stopping (--skip-nonfinite skips such steps)");
  const double scale = o.optimizer.clip_scale(grad_norm);
  for (auto& c : chunks) {
    if (finite) adamw_step(c->store(), o.optimizer, t, lr, scale);
    c->store().end_step();
  }
  return finite;
}

}  // namespace trident
