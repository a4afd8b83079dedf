// trident/backend/gemm_rate.hpp: the FLOP/s this machine's GEMM (backend::gemm, the BLAS) gives
// one rank while every rank of the world multiplies at once: the cost model's compute rate
// (costmodel/calibrate.hpp) and the peak of MFU on a CPU (io/hardware_peak.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "../core/comm.hpp"
#include "../core/flight_recorder.hpp"
#include "../core/median.hpp"
#include "cpu/gemm.hpp"

namespace trident::backend {

namespace detail {

// The slowest rank's seconds for f(), started together after a barrier; median of `reps`.
template <class F>
double time_together(const Comm& world, int reps, F&& f) {
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    world.barrier();
    const double t0 = trident::detail::now_seconds();
    f();
    times.push_back(world.all_reduce_value(trident::detail::now_seconds() - t0, ReduceOp::max));
  }
  return median(times);
}
}  // namespace detail

// GEMM FLOP/s (in T) of one rank while every rank runs the three products of a linear layer at
// (rows, inner) x (inner, cols): forward, the input's gradient and the weight's gradient, about
// `flops_per_rank` of them, the slowest rank's time, median of 3. Collective. The products cycle
// over copies of their operands that fill `working_set` bytes, as a step sweeps its weights and
// activations: measured with 8 ranks on 2 cores, a 4 MB working set per rank multiplies at 43
// GFLOP/s per rank, 60-120 MB at 37.6 (the caches no longer hold it).
template <class T>
double measure_gemm_flops(const Comm& world, int rows, int inner, int cols, double working_set = 0,
                          double flops_per_rank = 1.5e9) {
  struct Operands {
    std::vector<T> x, w, y, dx, dw;
  };
  const double copy_bytes =
      sizeof(T) * (2.0 * rows * inner + 2.0 * inner * cols + double(rows) * cols);
  const int copies = std::clamp(static_cast<int>(std::ceil(working_set / copy_bytes)), 1, 64);
  std::vector<Operands> ops(copies);
  for (Operands& o : ops) {
    o.x.assign(std::size_t(rows) * inner, T(0.5)), o.w.assign(std::size_t(inner) * cols, T(0.25));
    o.y.assign(std::size_t(rows) * cols, T(0)), o.dx.assign(o.x.size(), T(0));
    o.dw.assign(o.w.size(), T(0));
  }
  const double flops = 3 * 2.0 * rows * inner * cols;  // the three products
  const int reps = std::max(copies, static_cast<int>(flops_per_rank / flops));
  const double seconds = detail::time_together(world, 3, [&] {
    for (int r = 0; r < reps; ++r) {
      Operands& o = ops[r % copies];
      // y: (rows, cols) = x w; dx: (rows, inner) = y w^T; dw: (inner, cols) += x^T y
      gemm<T>(view(o.y.data(), rows, cols), cview(o.x.data(), rows, inner),
              cview(o.w.data(), inner, cols), false, false, T(0));
      gemm<T>(view(o.dx.data(), rows, inner), cview(o.y.data(), rows, cols),
              cview(o.w.data(), inner, cols), false, true, T(0));
      gemm<T>(view(o.dw.data(), inner, cols), cview(o.x.data(), rows, inner),
              cview(o.y.data(), rows, cols), true, false, T(1));
    }
  });
  return reps * flops / seconds;
}

}  // namespace trident::backend
