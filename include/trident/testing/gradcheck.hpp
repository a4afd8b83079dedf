// trident/testing/gradcheck.hpp: a model's gradients against central finite differences, in
// double on one process — the whole model's (the trainer's reduced gradients against the loss
// at w +- h) and, for a decoder built on DecoderStage (model/decoder_stage.hpp), each part's:
// the Embedding, every layer's Block and the Head, on L = sum(R * out) for a fixed random R
// (the Head: its loss), against both the part's input and its parameters.
//
// Elements checked per tensor: the one with the largest analytic gradient, the first, the middle
// and the last. Agreement: |numeric - analytic| <= 1e-6 max(|analytic|, the tensor's largest
// |gradient|) + 1e-9. The numeric gradient is Richardson's extrapolation of central differences
// at h = 1e-4 and h / 2 (truncation error O(h^4), so h can be large enough that the loss's
// rounding stays below ~1e-11 absolute); a wrong backward errs by O(1). Runs on every rank of
// `world` alike (each alone); collective only in the split.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../train/trainer.hpp"
#include "parity_cases.hpp"

namespace trident::testing {

struct GradientCheck {
  std::string part, tensor;  // "Block 1", "w"; the whole model: "model", the parameter's name
  std::size_t index = 0;
  double numeric = 0, analytic = 0, scale = 0;
  bool ok() const { return std::abs(numeric - analytic) <= 1e-6 * scale + 1e-9; }
};

struct GradientReport {
  std::vector<GradientCheck> checks;
  bool ok() const {
    return !checks.empty() &&
           std::all_of(checks.begin(), checks.end(), [](const GradientCheck& c) { return c.ok(); });
  }
  // One line per part and tensor: elements checked, the tensor's largest |gradient|, the worst
  // |numeric - analytic| and that over the scale (max(|analytic|, largest |gradient|)).
  std::string text() const {
    std::string out;
    char line[256];
    std::snprintf(line, sizeof line, "%-14s %-28s %6s %11s %11s %11s  %s\n", "part", "tensor",
                  "checked", "largest |g|", "worst diff", "relative", "verdict");
    out += line;
    for (std::size_t a = 0; a < checks.size();) {
      std::size_t b = a;
      double worst = 0, relative = 0, scale = 0;
      bool good = true;
      for (; b < checks.size() && checks[b].part == checks[a].part &&
             checks[b].tensor == checks[a].tensor;
           ++b) {
        const GradientCheck& c = checks[b];
        const double diff = std::abs(c.numeric - c.analytic);
        worst = std::max(worst, diff);
        scale = std::max(scale, c.scale);
        relative = std::max(relative, diff / std::max(c.scale, 1e-300));
        good = good && c.ok();
      }
      std::snprintf(line, sizeof line, "%-14s %-28s %6zu %11.2e %11.2e %11.2e  %s\n",
                    checks[a].part.c_str(), checks[a].tensor.c_str(), b - a, scale, worst, relative,
                    good ? "ok" : "WRONG");
      out += line;
      a = b;
    }
    return out + (ok() ? "gradients match central differences\n"
                       : "GRADIENTS DO NOT MATCH central differences\n");
  }
};

namespace detail {
constexpr double kStep = 1e-4;  // h of the larger central difference

// Checks d f / d x[k] for the chosen k of x (size n) against grad, f evaluated at x[k] +- h.
inline void check_elements(GradientReport& r, const std::string& part, const std::string& tensor,
                           double* x, const double* grad, std::size_t n,
                           const std::function<double()>& f) {
  if (n == 0) return;
  double scale = 0;
  std::size_t largest = 0;
  for (std::size_t k = 0; k < n; ++k)
    if (std::abs(grad[k]) > scale) {
      scale = std::abs(grad[k]);
      largest = k;
    }
  std::vector<std::size_t> at = {largest, 0, n / 2, n - 1};
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  for (std::size_t k : at) {
    const double saved = x[k];
    auto central = [&](double h) {
      x[k] = saved + h;
      const double up = f();
      x[k] = saved - h;
      const double down = f();
      x[k] = saved;
      return (up - down) / (2 * h);
    };
    // Richardson's extrapolation of two central differences: error O(h^4), not O(h^2)
    const double numeric = (4 * central(kStep / 2) - central(kStep)) / 3;
    GradientCheck c{part, tensor, k, numeric, grad[k], 0};
    c.scale = std::max(std::abs(c.analytic), scale);
    r.checks.push_back(c);
  }
}
}  // namespace detail

// The whole model: one process, the base run's first batch; every parameter's chosen elements.
template <class M>
GradientReport check_model_gradients(const Comm& world, const M& model, const TokenSource& data,
                                     const TrainOptions& base) {
  const Comm self = world.split(world.rank(), 0, "gradcheck-self");
  Trainer<M, double> t(self, model, single_process(base), data);
  (void)t.gradients_only();
  UnitStore<double>& st = t.chunk(0).store();
  std::vector<std::vector<double>> grads;  // every unit's, before any loss is evaluated again
  for (int u = 0; u < st.size(); ++u) {
    const Span<double> g = st.reduced_grads(u);
    grads.emplace_back(g.data(), g.data() + g.size());
  }
  GradientReport r;
  for (int u = 0; u < st.size(); ++u)
    for (const LocalParam& lp : st.layout(u).params)  // ZeRO-0: the stored values are read
      detail::check_elements(r, "model", lp.spec.name, st.owned_params(u) + lp.offset,
                             grads[u].data() + lp.offset, lp.numel,
                             [&] { return t.gradients_only().loss; });
  return r;
}

}  // namespace trident::testing
