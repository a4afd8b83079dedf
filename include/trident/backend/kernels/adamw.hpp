// trident/backend/kernels/adamw.hpp: one AdamW step on a backend, one element per call.
//
// PyTorch's formulation of AdamW (Loshchilov & Hutter, "Decoupled Weight Decay
// Regularization", 2019), as AdamW::update in optim/adamw.hpp: g = grad * grad_scale (the
// clipping factor); m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p = p (1 - lr wd) - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
// P: parameters, G: gradients, M: moments and the arithmetic (float or double each).
#pragma once

#include <cmath>

#include "../host_device.hpp"

namespace trident::backend::kernels {

// The per-step constants, computed once on the host.
template <class M>
struct AdamWStep {
  M beta1, beta2, eps, grad_scale, step_size, inv_sqrt_bc2, shrink;

  // step t (1-based); decay: whether weight decay applies to these elements.
  static AdamWStep make(double beta1, double beta2, double eps, double weight_decay, int t,
                        double lr, bool decay, double grad_scale) {
    return {M(beta1),
            M(beta2),
            M(eps),
            M(grad_scale),
            M(lr / (1.0 - std::pow(beta1, t))),
            M(1.0 / std::sqrt(1.0 - std::pow(beta2, t))),
            M(decay ? 1.0 - lr * weight_decay : 1.0)};
  }
};

template <class P, class G, class M>
struct AdamWUpdate {
  P* param;
  const G* grad;
  M* m;
  M* v;
  AdamWStep<M> s;
  TRIDENT_HOST_DEVICE void operator()(int k) const {
    const M g = M(grad[k]) * s.grad_scale;
    m[k] = s.beta1 * m[k] + (M(1) - s.beta1) * g;
    v[k] = s.beta2 * v[k] + (M(1) - s.beta2) * (g * g);
    const M p =
        M(param[k]) * s.shrink - s.step_size * m[k] / (math::sqrt(v[k]) * s.inv_sqrt_bc2 + s.eps);
    param[k] = P(p);
  }
};

template <class B, class P, class G, class M>
void adamw_update(P* param, const G* grad, M* m, M* v, int n, const AdamWStep<M>& step) {
  B::for_each(n, AdamWUpdate<P, G, M>{param, grad, m, v, step});
}

}  // namespace trident::backend::kernels
