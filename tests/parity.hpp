// tests/parity.hpp: a parallel Trainer against the single-process gpt2::ReferenceGPT on the same
// data and the same initial weights: the loss of every step, and every parameter after the
// steps, compared element by element on the rank that holds it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <trident/models/gpt2/gpt2.hpp>
#include <trident/models/gpt2/reference.hpp>
#include <trident/testing/parity.hpp>

#include "mpi_test.hpp"
#include "small_model.hpp"

namespace trident::test {

// The small model of the parity tests (small_model.hpp) on a mesh, 8 sequences per step.
inline gpt2::Options small_options(MeshShape mesh, int layers = 4) {
  gpt2::Options o;
  o.model = small_model(layers);
  o.mesh = mesh;
  o.batch = 8;
  o.optimizer = small_optimizer();
  return o;
}

// How close a run must be to the reference: relative differences of each step's loss and
// gradient norm, and of the parameters after the steps — per tensor (largest |difference| over
// largest |value|), or, for runs whose rounding differs from the reference's (float, bf16),
// over the whole model (2-norm of the difference over 2-norm of the parameters).
struct Tolerance {
  double loss = 1e-10, norm = 1e-9, params = 1e-10;
  bool whole_model = false;
};

// Runs `steps` steps of both and checks losses and parameters. B: the backend the trainer runs
// on (backend::Cpu, or backend::Emulated: the CPU as a guarded device).
template <class T, class S = T, class B = backend::Cpu>
void check_parity(const Comm& comm, const gpt2::Options& o, int steps, double tol) {
  check_parity<T, S, B>(comm, o, steps, Tolerance{tol, tol * 10, tol, false});
}

template <class T, class S = T, class B = backend::Cpu>
void check_parity(const Comm& comm, const gpt2::Options& o, int steps, Tolerance tol) {
  const TokenSource data = TokenSource::synthetic(o.model.vocab);
  gpt2::Trainer<T, S, B> trainer(comm, o, data);
  gpt2::ReferenceGPT<T> ref(o.model);
  for (int s = 0; s < steps; ++s) {
    const StepResult r = trainer.step();
    const Microbatch batch = sample_rows(data, o.data_seed, s, 0, o.batch, o.model.seq);
    const double loss = ref.forward_backward(batch);
    const double norm = ref.step(o.optimizer, s + 1);
    INFO("step " << s);
    CHECK(std::abs(r.loss - loss) <= tol.loss * std::abs(loss));
    CHECK(std::abs(r.grad_norm - norm) <= tol.norm * norm);
  }
  // every parameter element this rank holds, against the reference's global tensor (the parity
  // kit's comparison); each element once in the whole-model norms: one TP rank for replicated
  // tensors, one DP replica, the first stage's copy of the tied embedding
  std::map<std::string, std::vector<double>> whole;
  for (const auto& [name, values] : ref.params()) whole[name].assign(values.begin(), values.end());
  const MeshCoord at = trainer.mesh().coord();
  const testing::ParameterDifference d =
      testing::compare_parameters(trainer, whole, [&](int c, int u, const LocalParam& lp) {
        return at.dp == 0 && at.cp == 0 && !(lp.tp_replicated() && at.tp != 0) &&
               !trainer.tied_copy(c, u);
      });
  CHECK(d.compared > 0);
  if (tol.whole_model) {
    const double relative =
        std::sqrt(comm.all_reduce_value(d.diff2) / comm.all_reduce_value(d.norm2));
    INFO("relative 2-norm of the parameter difference " << relative);
    CHECK(relative <= tol.params);
    return;
  }
  INFO("largest relative parameter difference " << d.worst << " in " << d.where);
  CHECK(d.worst <= tol.params);
}

}  // namespace trident::test
