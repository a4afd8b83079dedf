// tests/cuda/model_checks.hpp: GPT-2 trained on one rank of backend B (gpt2::BackendGPT: the
// parameters, gradients, AdamW moments and update in B's memory) against the single-process
// reference (gpt2::ReferenceGPT<double>) on the same data and initial weights: every step's loss
// and gradient norm, and every parameter after the steps. Written once over the backend type:
// tests/test_backend_model.cpp runs it with backend::Cpu, tests/cuda/test_model_gpu.cu with
// backend::Cuda.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <trident/data/tokens.hpp>
#include <trident/models/gpt2/backend_gpt.hpp>
#include <trident/models/gpt2/reference.hpp>

#include "../small_model.hpp"

namespace trident::test {

// How close: each step's loss (relative), gradient norm (relative) and the parameters after the
// steps — per tensor (largest |difference| over largest |value|) or, for an arithmetic whose
// rounding differs from the reference's (float), over the whole model (2-norm of the difference
// over 2-norm of the parameters), as tests/parity.hpp's Tolerance.
struct ModelTolerance {
  double loss = 1e-10, norm = 1e-9, params = 1e-10;
  bool whole_model = false;
};

// T: the backend's arithmetic (double, or float against the double reference).
template <class B, class T>
void check_backend_gpt(ModelTolerance tol, int steps = 3) {
  const gpt2::Config c = small_model();
  const AdamW opt = small_optimizer();
  const int rows = 8;
  const std::uint64_t data_seed = 42;
  const TokenSource data = TokenSource::synthetic(c.vocab);
  gpt2::BackendGPT<T, B> model(c, rows);
  gpt2::ReferenceGPT<double> ref(c);
  for (int s = 0; s < steps; ++s) {
    const Microbatch batch = sample_rows(data, data_seed, s, 0, rows, c.seq);
    const double loss = model.forward_backward(batch), want = ref.forward_backward(batch);
    const double norm = model.step(opt, s + 1), want_norm = ref.step(opt, s + 1);
    INFO("step " << s << ": loss " << loss << " (reference " << want << "), gradient norm " << norm
                 << " (reference " << want_norm << ")");
    CHECK(std::abs(loss - want) <= tol.loss * std::abs(want));
    CHECK(std::abs(norm - want_norm) <= tol.norm * want_norm);
  }
  double worst_all = 0, diff2 = 0, norm2 = 0;
  for (const auto& named : model.parameters()) {
    const std::string& name = named.first;
    const std::vector<T>& got = named.second;
    const std::vector<double>& want = ref.params().at(name);
    REQUIRE(got.size() == want.size());
    double scale = 0, worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      scale = std::max(scale, std::abs(want[i]));
      const double d = double(got[i]) - want[i];
      worst = std::max(worst, std::abs(d));
      diff2 += d * d, norm2 += want[i] * want[i];
    }
    INFO(name << ": largest relative difference " << worst / scale);
    if (!tol.whole_model) CHECK(worst <= tol.params * scale);
    worst_all = std::max(worst_all, worst / scale);
  }
  const double whole = std::sqrt(diff2 / norm2);
  MESSAGE(std::string(B::kName) << ", " << sizeof(T) * 8 << "-bit, after " << steps
                                << " AdamW steps: parameters' largest relative difference per "
                                << "tensor " << worst_all << ", whole-model " << whole);
  if (tol.whole_model) CHECK(whole <= tol.params);
}

}  // namespace trident::test
