// trident/optim/adamw.hpp: AdamW (Loshchilov & Hutter 2019), gradient clipping by global norm
// (Pascanu et al. 2013), and the warm-up + cosine learning-rate schedule (GPT-3, Brown et al.
// 2020, §B). Element-wise math only: which elements a rank updates is zero/'s business.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>

#include "../core/bf16.hpp"
#include "../detail/eigen.hpp"

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
  // P: master parameters; G: gradients (float, double or bf16); M: moments, and the type the
  // arithmetic is done in. Blocks of kBlock elements as Eigen arrays, so that sqrt and the
  // division vectorise. When P and G are M (float or double training) the arrays map the
  // buffers in place: one pass over param, grad, m and v, no copies; else (bf16) the block is
  // converted into M on the stack and back.
  template <class P, class G, class M>
  void update(P* param, const G* grad, M* m, M* v, std::size_t n, int t, double lr, bool decay,
              double grad_scale) const {
    constexpr int kBlock = 2048;
    using A = Eigen::Array<M, Eigen::Dynamic, 1, Eigen::ColMajor, kBlock, 1>;  // on the stack
    using Map = Eigen::Map<Eigen::Array<M, Eigen::Dynamic, 1>>;
    using CMap = Eigen::Map<const Eigen::Array<M, Eigen::Dynamic, 1>>;
    const M b1 = M(beta1), b2 = M(beta2), scale = M(grad_scale), e = M(eps);
    const M step_size = M(lr / (1.0 - std::pow(beta1, t)));
    const M inv_sqrt_bc2 = M(1.0 / std::sqrt(1.0 - std::pow(beta2, t)));
    const M shrink = M(decay ? 1.0 - lr * weight_decay : 1.0);
    auto step = [&](const auto& g, auto&& p, Map mi, Map vi) {  // g: the scaled gradient
      mi = b1 * mi + (M(1) - b1) * g;
      vi = b2 * vi + (M(1) - b2) * g.square();
      p = p * shrink - step_size * mi / (vi.sqrt() * inv_sqrt_bc2 + e);
    };
    const std::ptrdiff_t blocks = (static_cast<std::ptrdiff_t>(n) + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t blk = 0; blk < blocks; ++blk) {
      const std::ptrdiff_t i0 = blk * kBlock;
      const std::ptrdiff_t len = std::min<std::ptrdiff_t>(kBlock, std::ptrdiff_t(n) - i0);
      if constexpr (std::is_same_v<P, M> && std::is_same_v<G, M>) {
        step(CMap(grad + i0, len) * scale, Map(param + i0, len), Map(m + i0, len),
             Map(v + i0, len));
      } else {
        A g(len), p(len);
        for (std::ptrdiff_t k = 0; k < len; ++k)
          g[k] = M(to_float(grad[i0 + k])) * scale, p[k] = M(to_float(param[i0 + k]));
        step(g, p, Map(m + i0, len), Map(v + i0, len));
        for (std::ptrdiff_t k = 0; k < len; ++k) param[i0 + k] = convert_to<P>(p[k]);
      }
    }
  }
};

}  // namespace trident
