// trident/optim/adamw.hpp: AdamW (Loshchilov & Hutter 2019), gradient clipping by global norm
// (Pascanu et al. 2013), and the warm-up + cosine learning-rate schedule (GPT-3, Brown et al.
// 2020, §B). Element-wise math only: which elements a rank updates is zero/'s business.
#pragma once

#include <cmath>
#include <cstddef>

#include "../core/bf16.hpp"

namespace trident {

struct AdamW {
  double lr = 6e-4;  // peak learning rate
  double min_lr = 6e-5;
  int warmup = 10;  // steps of linear warm-up
  int steps = 100;  // cosine decay ends here
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double weight_decay = 0.1;  // applied to weights only (not biases, not LayerNorm)
  double clip = 1.0;          // max global gradient norm; <= 0 disables clipping

  // Learning rate at step (0-based).
  double lr_at(int step) const {
    if (step < warmup) return lr * (step + 1) / warmup;
    if (step >= steps) return min_lr;
    const double progress = double(step - warmup) / double(steps - warmup > 0 ? steps - warmup : 1);
    return min_lr + 0.5 * (1.0 + std::cos(3.141592653589793 * progress)) * (lr - min_lr);
  }

  // Factor that scales gradients so that their global norm is at most `clip`.
  double clip_scale(double global_norm) const {
    if (clip <= 0 || global_norm <= clip) return 1.0;
    return clip / (global_norm + 1e-6);
  }

  // One update of n elements at step t (1-based), PyTorch's formulation: decoupled weight
  // decay p <- p (1 - lr wd), then p <- p - lr m_hat / (sqrt(v_hat) + eps). The gradient is
  // first multiplied by grad_scale (the clipping factor).
  // P: master parameters; G: gradients (float, double or bf16); M: moments.
  template <class P, class G, class M>
  void update(P* param, const G* grad, M* m, M* v, std::size_t n, int t, double lr, bool decay,
              double grad_scale) const {
    const double bc1 = 1.0 - std::pow(beta1, t), bc2 = 1.0 - std::pow(beta2, t);
    const double step_size = lr / bc1, sqrt_bc2 = std::sqrt(bc2);
    const double shrink = decay ? 1.0 - lr * weight_decay : 1.0;
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i) {
      const double g = static_cast<double>(to_float(grad[i])) * grad_scale;
      const double mi = beta1 * m[i] + (1 - beta1) * g;
      const double vi = beta2 * v[i] + (1 - beta2) * g * g;
      m[i] = static_cast<M>(mi);
      v[i] = static_cast<M>(vi);
      param[i] = static_cast<P>(static_cast<double>(param[i]) * shrink -
                                step_size * mi / (std::sqrt(vi) / sqrt_bc2 + eps));
    }
  }
};

}  // namespace trident
