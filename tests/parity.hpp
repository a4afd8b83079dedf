// tests/parity.hpp: a parallel Trainer against the single-process ReferenceGPT on the same
// data and the same initial weights: the loss of every step, and every parameter after the
// steps, compared element by element on the rank that holds it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <trident/model/reference.hpp>
#include <trident/train/trainer.hpp>

#include "mpi_test.hpp"

namespace trident::test {

// The small model of the parity tests: a vocab of 67 is divisible by no TP size, so the
// padding of the vocab-parallel layers is always exercised.
inline TrainOptions small_options(MeshShape mesh, int layers = 4) {
  TrainOptions o;
  o.model.vocab = 67;
  o.model.seq = 16;
  o.model.layers = layers;
  o.model.hidden = 32;
  o.model.heads = 8;
  o.model.seed = 7;
  o.mesh = mesh;
  o.batch = 8;
  o.optimizer.lr = 1e-2;
  o.optimizer.warmup = 1;
  o.optimizer.steps = 3;
  o.optimizer.clip = 1.0;
  return o;
}

// Largest |a - b| over the tensor, relative to the largest |b|.
struct Diff {
  double worst = 0;
  std::string where;
};

// Runs `steps` steps of both and checks losses and parameters to `tol` relative.
template <class T, class S = T>
void check_parity(const Comm& comm, const TrainOptions& o, int steps, double tol) {
  const TokenSource data = TokenSource::synthetic(o.model.vocab);
  Trainer<T, S> trainer(comm, o, data);
  ReferenceGPT<T> ref(o.model);
  for (int s = 0; s < steps; ++s) {
    const StepResult r = trainer.step();
    const Microbatch batch = sample_rows(data, o.data_seed, s, 0, o.batch, o.model.seq);
    const double loss = ref.forward_backward(batch);
    const double norm = ref.step(o.optimizer, s + 1);
    INFO("step " << s);
    CHECK(std::abs(r.loss - loss) <= tol * std::abs(loss));
    CHECK(std::abs(r.grad_norm - norm) <= tol * 10 * norm);
  }
  // every parameter element this rank holds, against the reference's global tensor
  Diff diff;
  for (int c = 0; c < trainer.chunks(); ++c) {
    UnitStore<T, S>& st = trainer.chunk(c).store();
    for (int u = 0; u < st.size(); ++u) {
      const T* p = st.params(u);
      for (const LocalParam& lp : st.layout(u).params) {
        const std::vector<T>& want = ref.params().at(lp.spec.name);
        double scale = 0, worst = 0;
        for (T x : want) scale = std::max(scale, std::abs(double(x)));
        const ShardLayout& l = lp.layout;
        for (std::int64_t i = 0; i < l.local_rows(); ++i)
          for (std::int64_t j = 0; j < l.local_cols(); ++j) {
            const std::int64_t g = l.global_offset(i, j, l.rank());
            const double got = double(p[lp.offset + i * l.local_cols() + j]);
            worst = std::max(worst, std::abs(got - (g < 0 ? 0.0 : double(want[g]))));
          }
        if (worst / scale > diff.worst) diff = {worst / scale, lp.spec.name};
      }
      st.release(u);
    }
  }
  INFO("largest relative parameter difference " << diff.worst << " in " << diff.where);
  CHECK(diff.worst <= tol);
}

}  // namespace trident::test
