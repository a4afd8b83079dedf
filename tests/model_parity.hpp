// tests/model_parity.hpp: a trainer of any model, on any backend, against another run of the
// same model on the same data and initial weights: against one process running it alone (every
// step's loss and gradient norm, every parameter element this rank holds, by global index: the
// parity kit's comparison, testing/parity.hpp), or against a run on the same mesh, bit for bit
// (a backend whose kernels are the CPU's).
#pragma once

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <trident/backend/device_buffer.hpp>
#include <trident/testing/parity.hpp>
#include <trident/train/trainer.hpp>

#include "mpi_test.hpp"

namespace trident::test {

using testing::unit_parameters;
using testing::whole_parameters;

// Runs `steps` steps of run and ref (one process) and checks every step's loss and gradient
// norm and every parameter element run holds on this rank, relative to within tol (the parity
// kit's comparison, testing/parity.hpp).
template <class Run, class Ref>
void check_against_single_process(Run& run, Ref& ref, int steps = 3, double tol = 1e-10) {
  for (int s = 0; s < steps; ++s) {
    const StepResult r = run.step(), want = ref.step();
    INFO("step " << s);
    CHECK(std::abs(r.loss - want.loss) <= tol * std::abs(want.loss));
    CHECK(std::abs(r.grad_norm - want.grad_norm) <= 10 * tol * want.grad_norm);
  }
  const testing::ParameterDifference d = testing::compare_parameters(run, whole_parameters(ref));
  INFO("largest relative parameter difference " << d.worst << " in " << d.where);
  CHECK(d.compared > 0);
  CHECK(d.worst <= tol);
}

// Runs `steps` steps of a and b (the same mesh, model, data and weights) and checks that every
// step's loss and gradient norm and every parameter are the same bits.
template <class A, class B>
void check_same_bits(A& a, B& b, int steps = 3) {
  for (int s = 0; s < steps; ++s) {
    const StepResult x = a.step(), y = b.step();
    INFO("step " << s << ": loss " << x.loss << " and " << y.loss);
    CHECK(std::memcmp(&x.loss, &y.loss, sizeof(double)) == 0);
    CHECK(std::memcmp(&x.grad_norm, &y.grad_norm, sizeof(double)) == 0);
  }
  std::size_t differ = 0, compared = 0;
  for (int c = 0; c < a.chunks(); ++c)
    for (int u = 0; u < a.chunk(c).store().size(); ++u) {
      const auto p = unit_parameters(a, c, u), q = unit_parameters(b, c, u);
      REQUIRE(p.size() == q.size());
      for (std::size_t k = 0; k < p.size(); ++k, ++compared)
        differ += std::memcmp(&p[k], &q[k], sizeof(p[k])) != 0;
    }
  INFO(differ << " of " << compared << " parameter elements differ");
  CHECK(compared > 0);
  CHECK(differ == 0);
}

}  // namespace trident::test
