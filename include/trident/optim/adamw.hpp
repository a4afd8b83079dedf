// trident/optim/adamw.hpp: AdamW (Loshchilov & Hutter 2019), gradient clipping by global norm
// (Pascanu et al. 2013), and the warm-up + cosine learning-rate schedule (GPT-3, Brown et al.
// 2020, §B). Element-wise math only: which elements a rank updates is zero/'s business.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>

#include "../backend/cpu/cpu.hpp"
#include "../backend/host_device.hpp"
#include "../backend/ops.hpp"
#include "../core/bf16.hpp"

namespace trident {

// Sum of squares of n gradients (float, double or bf16) in double, for the global norm. One
// loop, vectorised as an OpenMP SIMD reduction (a plain floating-point sum stays scalar: the
// compiler may not reorder it); the order of the partial sums is fixed by the vector width.
template <class G>
double square_sum(const G* x, std::size_t n) {
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::size_t k = 0; k < n; ++k) {
    const double value = to_float(x[k]);
    sum += value * value;
  }
  return sum;
}

namespace adamw_detail {
// Element k: g = grad * scale; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p = p shrink - step_size m / (sqrt(v) inv_sqrt_bc2 + eps)  (bias corrections folded in).
template <class P, class G, class M>
struct Update {
  P* param;
  const G* grad;
  M* m;
  M* v;
  M beta1, beta2, eps, scale, step_size, inv_sqrt_bc2, shrink;
  TRIDENT_HOST_DEVICE void operator()(backend::Index k) const {
    using backend::ops_detail::narrow;
    using backend::ops_detail::widen;
    const M g = M(widen(grad[k])) * scale;
    const M mk = beta1 * m[k] + (M(1) - beta1) * g;
    const M vk = beta2 * v[k] + (M(1) - beta2) * (g * g);
    m[k] = mk;
    v[k] = vk;
    const M p = M(widen(param[k])) * shrink -
                step_size * mk / (backend::math::sqrt(vk) * inv_sqrt_bc2 + eps);
    param[k] = narrow<P>(p);
  }
};
}  // namespace adamw_detail

// Every default is stated here. The schedule's unset fields (steps 0, warmup and min_lr < 0)
// follow the run: a Trainer fills them from TrainOptions::steps (for_run), as the command-line
// programs do from --steps; where the run's length is unknown the rate stays at lr (no warm-up,
// no decay) rather than decaying on a length nobody chose.
struct AdamW {
  double lr = 6e-4;    // peak learning rate
  double min_lr = -1;  // the cosine's floor; < 0: lr / 10
  int warmup = -1;     // steps of linear warm-up; < 0: 5% of steps, at least 1 (0 if unknown)
  int steps = 0;       // cosine decay ends here; 0: the run's length
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double weight_decay = 0.1;  // applied to weights only (not biases, not LayerNorm)
  double clip = 1.0;          // max global gradient norm; <= 0 disables clipping

  // The schedule for a run of run_steps optimizer steps (0: unknown), its unset fields filled.
  AdamW for_run(int run_steps) const {
    AdamW a = *this;
    if (a.steps <= 0) a.steps = std::max(0, run_steps);
    if (a.warmup < 0) a.warmup = a.steps > 0 ? std::max(1, a.steps / 20) : 0;
    if (a.min_lr < 0) a.min_lr = a.lr / 10;
    return a;
  }

  // Learning rate at step (0-based); fields still unset as for_run(0).
  double lr_at(int step) const {
    const AdamW a = for_run(0);
    if (step < a.warmup) return a.lr * (step + 1) / a.warmup;
    if (a.steps <= 0) return a.lr;  // no length: no decay
    if (step >= a.steps) return a.min_lr;
    const double span = a.steps - a.warmup > 0 ? a.steps - a.warmup : 1;
    const double progress = double(step - a.warmup) / span;
    return a.min_lr + 0.5 * (1.0 + std::cos(3.141592653589793 * progress)) * (a.lr - a.min_lr);
  }

  // Factor that scales gradients so that their global norm is at most `clip`.
  double clip_scale(double global_norm) const {
    if (clip <= 0 || global_norm <= clip) return 1.0;
    return clip / (global_norm + 1e-6);
  }

  // One update of n elements at step t (1-based), PyTorch's formulation: decoupled weight
  // decay p <- p (1 - lr wd), then p <- p - lr m_hat / (sqrt(v_hat) + eps). The gradient is
  // first multiplied by grad_scale (the clipping factor). On backend Bk's memory: one
  // elementwise body (adamw_detail::Update), one pass over param, grad, m and v.
  // P: master parameters; G: gradients (float, double or bf16); M: moments, and the type the
  // arithmetic is done in.
  template <class Bk = backend::Cpu, class P, class G, class M>
  void update(P* param, const G* grad, M* m, M* v, std::size_t n, int t, double lr, bool decay,
              double grad_scale) const {
    const adamw_detail::Update<P, G, M> body{param,
                                             grad,
                                             m,
                                             v,
                                             M(beta1),
                                             M(beta2),
                                             M(eps),
                                             M(grad_scale),
                                             M(lr / (1.0 - std::pow(beta1, t))),
                                             M(1.0 / std::sqrt(1.0 - std::pow(beta2, t))),
                                             M(decay ? 1.0 - lr * weight_decay : 1.0)};
    Bk::elementwise(backend::Index(n), body);
  }
};

}  // namespace trident
