// trident/plan/calibrate.hpp: this machine's rates, measured, for the cost model of trident's
// own runs (predict.hpp).
//
// The planner's ClusterSpec is a datasheet. To predict a trident step on this machine the cost
// model needs what trident gets here: the FLOP/s of Eigen's sgemm through backend::gemm at the
// model's shapes, the cost of trident's zero-filled Buffers and of its AdamW, and the latency
// and bandwidth of trident's Comm collectives and point-to-point messages, fitted as
//     seconds = latency + bytes / bandwidth
// with bytes in CommStats' convention (core/stats.hpp: the whole logical buffer of a call).
//
// Oversubscription. 8 ranks on 2 cores share each core four ways, so a rank computes at about
// a quarter of a core, and a collective waits for ranks that are descheduled. Every measurement
// here therefore runs on all ranks of the world at once, as the training step does: each rank
// multiplies while all the others multiply (the rate is then per rank under the step's
// contention: about cores x one core's rate / ranks), and each group of g ranks communicates
// while the other world / g groups do the same. Timings are the slowest rank's, the median of
// a few repetitions. Nothing is measured on one idle core and then scaled.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <vector>

#include "../backend/cpu/gemm.hpp"
#include "../core/comm.hpp"
#include "../core/memory.hpp"
#include "../optim/adamw.hpp"

namespace trident::plan {

// seconds = latency + bytes / bandwidth (least squares over the measured sizes).
struct LinearFit {
  double latency = 0;    // s
  double bandwidth = 0;  // bytes/s; 0: bytes cost nothing
  double seconds(double bytes) const { return latency + (bandwidth > 0 ? bytes / bandwidth : 0); }
};

inline LinearFit fit_line(const std::vector<double>& bytes, const std::vector<double>& seconds) {
  const double n = double(bytes.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i)
    sx += bytes[i], sy += seconds[i], sxx += bytes[i] * bytes[i], sxy += bytes[i] * seconds[i];
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  LinearFit f;
  f.bandwidth = slope > 0 ? 1 / slope : 0;
  f.latency = std::max(0.0, (sy - (slope > 0 ? slope : 0) * sx) / n);
  return f;
}

// What the cost model knows of this machine, per rank, with all ranks busy at once.
struct Calibration {
  int ranks = 1;           // ranks that ran at once
  double gemm_flops = 0;   // sgemm FLOP/s of one rank at the model's shapes
  double fill_bytes = 0;   // bytes/s of allocating a zero-filled Buffer and freeing it
  double adamw_rate = 0;   // AdamW element updates per second
  // By group size: the fit of all_reduce, reduce_scatter, all_gather (CommOp order).
  std::map<int, std::array<LinearFit, 3>> collectives;
  LinearFit p2p;  // one message between two ranks, while every pair sends one

  LinearFit collective(CommOp op, int group) const {
    auto it = collectives.find(group);
    require(it != collectives.end() && static_cast<int>(op) < 3,
            "calibration: no measurement of " + std::string(to_string(op)) + " over " +
                std::to_string(group) + " ranks");
    return it->second[static_cast<int>(op)];
  }
};

namespace detail {
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

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

// sgemm FLOP/s of one rank while every rank runs the three products of a linear layer at
// (rows, inner) x (inner, cols): forward, the input's gradient and the weight's gradient.
inline double measure_gemm_flops(const Comm& world, int rows, int inner, int cols) {
  std::vector<float> x(std::size_t(rows) * inner, 0.5f), w(std::size_t(inner) * cols, 0.25f);
  std::vector<float> y(std::size_t(rows) * cols, 0.f), dx(x.size()), dw(w.size());
  const double flops = 3 * 2.0 * rows * inner * cols;  // the three products
  const int reps = std::max(1, static_cast<int>(1.5e9 / flops));  // ~1.5 GFLOP per rank
  const double seconds = detail::time_together(world, 3, [&] {
    for (int r = 0; r < reps; ++r) {
      backend::gemm<float>(backend::view(y.data(), rows, cols), backend::cview(x.data(), rows, inner),
                           backend::cview(w.data(), inner, cols), false, false, 0.f);
      backend::gemm<float>(backend::view(dx.data(), rows, inner), backend::cview(y.data(), rows, cols),
                           backend::cview(w.data(), inner, cols), false, true, 0.f);
      backend::gemm<float>(backend::view(dw.data(), inner, cols), backend::cview(x.data(), rows, inner),
                           backend::cview(y.data(), rows, cols), true, false, 1.f);
    }
  });
  return reps * flops / seconds;
}

// Bytes/s of filling Buffers the way a microbatch's stash is filled: `held` zero-filled
// Buffers of `bytes` each allocated one after the other, then all freed, every rank at once.
// Large allocations go back to the system when freed, so this includes page faults.
inline double measure_fill_bandwidth(const Comm& world, std::size_t bytes, int held) {
  const int reps = std::max(1, static_cast<int>(256e6 / (double(bytes) * held)));  // ~256 MB
  const double seconds = detail::time_together(world, 3, [&] {
    for (int r = 0; r < reps; ++r) {
      std::vector<Buffer<float>> stash(held);
      for (Buffer<float>& b : stash) b.allocate(MemoryKind::buffers, bytes / sizeof(float));
    }
  });
  return reps * double(bytes) * held / seconds;
}

// AdamW element updates per second (float parameters, gradients and moments), every rank at once.
inline double measure_adamw_rate(const Comm& world, std::size_t elements) {
  std::vector<float> p(elements, 0.1f), g(elements, 0.01f), m(elements, 0.f), v(elements, 0.f);
  const AdamW opt;
  const int reps = std::max(1, static_cast<int>(2e7 / double(elements)));
  const double seconds = detail::time_together(world, 3, [&] {
    for (int r = 0; r < reps; ++r)
      opt.update(p.data(), g.data(), m.data(), v.data(), elements, r + 1, 1e-3, true, 1.0);
  });
  return reps * double(elements) / seconds;
}

// A call as the step makes it: after a stretch of compute (`work`), on a freshly allocated
// Buffer, every rank at once. Its cost is the time `cycles` of (work, call) take beyond
// `cycles` of work alone: the call's latency and transfer, the wait for group members that the
// scheduler had not run yet, and what a new buffer costs MPI. Fitted over the sizes.
template <class Work, class Call>
LinearFit measure_after_work(const Comm& world, const std::vector<std::size_t>& sizes,
                             Work&& work, Call&& call, int cycles = 6) {
  const double alone = detail::time_together(world, 3, [&] {
    for (int c = 0; c < cycles; ++c) work();
  });
  std::vector<double> xs, ys;
  for (std::size_t bytes : sizes) {
    const double with = detail::time_together(world, 3, [&] {
      for (int c = 0; c < cycles; ++c) {
        work();
        call(bytes);
      }
    });
    xs.push_back(double(bytes));
    ys.push_back(std::max(0.0, with - alone) / cycles);
  }
  return fit_line(xs, ys);
}

// One collective over groups of `group` consecutive ranks (all groups at once), after work.
template <class Work>
LinearFit measure_collective(const Comm& world, CommOp op, int group,
                             const std::vector<std::size_t>& sizes, Work&& work) {
  const Comm g = world.split(world.rank() / group, world.rank(), "calibrate");
  return measure_after_work(world, sizes, work, [&](std::size_t bytes) {
    const std::size_t n = std::max<std::size_t>(bytes / sizeof(float) / group, 1) * group;
    Buffer<float> full(MemoryKind::buffers, n), shard(MemoryKind::buffers, n / group);
    if (op == CommOp::all_reduce) g.all_reduce(Span<float>(full.data(), n));
    if (op == CommOp::reduce_scatter) g.reduce_scatter(Span<const float>(full.data(), n), Span<float>(shard.data(), n / group));
    if (op == CommOp::all_gather) g.all_gather(Span<const float>(shard.data(), n / group), Span<float>(full.data(), n));
  });
}

// A message from each even rank to the next odd one (all pairs at once), after work.
template <class Work>
LinearFit measure_p2p(const Comm& world, const std::vector<std::size_t>& sizes, Work&& work) {
  const Comm pair = world.split(world.rank() / 2, world.rank(), "calibrate");
  return measure_after_work(world, sizes, work, [&](std::size_t bytes) {
    Buffer<float> buf(MemoryKind::buffers, std::max<std::size_t>(bytes / sizeof(float), 1));
    if (pair.size() < 2) return;
    if (pair.rank() == 0) pair.send(Span<const float>(buf.data(), buf.size()), 1, 0);
    if (pair.rank() == 1) pair.recv(Span<float>(buf.data(), buf.size()), 0, 0);
  });
}

// Everything, the GEMM measured at (rows, inner) x (inner, cols), whose forward product is also
// the compute between calls. A few seconds. Collective. The communicators are named
// "calibrate" in comm_stats(); its barriers and maxima count as "world": reset the counters
// before measuring a run.
inline Calibration calibrate(const Comm& world, int rows, int inner, int cols) {
  Calibration c;
  c.ranks = world.size();
  c.gemm_flops = measure_gemm_flops(world, rows, inner, cols);
  c.fill_bytes = measure_fill_bandwidth(world, std::size_t(1) << 20, 32);
  c.adamw_rate = measure_adamw_rate(world, std::size_t(1) << 20);
  std::vector<float> x(std::size_t(rows) * inner, 0.5f), w(std::size_t(inner) * cols, 0.25f);
  std::vector<float> y(std::size_t(rows) * cols);
  auto work = [&] {
    backend::gemm<float>(backend::view(y.data(), rows, cols), backend::cview(x.data(), rows, inner),
                         backend::cview(w.data(), inner, cols), false, false, 0.f);
  };
  const std::vector<std::size_t> sizes{std::size_t(4) << 10, std::size_t(512) << 10,
                                       std::size_t(4) << 20};
  for (int g = 2; g <= world.size(); ++g)
    if (world.size() % g == 0)
      for (CommOp op : {CommOp::all_reduce, CommOp::reduce_scatter, CommOp::all_gather})
        c.collectives[g][static_cast<int>(op)] = measure_collective(world, op, g, sizes, work);
  if (world.size() >= 2) c.p2p = measure_p2p(world, sizes, work);
  return c;
}

}  // namespace trident::plan
