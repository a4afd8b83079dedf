// trident/costmodel/calibrate.hpp: this machine's rates, measured, for the cost model of trident's
// own runs (predict.hpp).
//
// The planner's ClusterSpec is a datasheet. To predict a trident step on this machine the cost
// model measures what trident gets here: the FLOP/s of Eigen's sgemm through backend::gemm at
// the run's shapes; the seconds of a layer's other kernels (LayerNorm, the attention core, GELU,
// the residual stream's adds) and of the loss, which on a CPU are not small next to the GEMMs;
// the cost of trident's zero-filled Buffers and of AdamW; and each of trident's Comm calls,
// fitted as seconds = latency + bytes / bandwidth, bytes in CommStats' convention (the whole
// buffer of a call, core/stats.hpp).
//
// Oversubscription. 8 ranks on 2 cores share each core four ways: a rank computes at about a
// quarter of a core, and a call waits for group members the scheduler has not run. So every
// measurement runs on all ranks of the world at once, as the step does: each rank multiplies
// while all the others do (per-rank rates come out near cores x one core's rate / ranks), and
// each call is timed the way the step makes it: after a stretch of compute, on a freshly
// allocated Buffer, with every group of the world calling at once, as the time that cycles of
// (compute, call) take beyond the compute alone. Timings are the slowest rank's, the median of
// a few repetitions; nothing is measured on an idle core and scaled.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../backend/cpu/gemm.hpp"
#include "../backend/cpu/threads.hpp"
#include "../backend/gemm_rate.hpp"
#include "../core/comm.hpp"
#include "../core/matrix.hpp"
#include "../core/memory.hpp"
#include "../core/message_tags.hpp"
#include "../cp/attention.hpp"
#include "../nn/nn.hpp"
#include "../optim/adamw.hpp"

namespace trident::costmodel {

// seconds = latency + bytes / bandwidth (least squares over the measured sizes).
struct LinearFit {
  double latency = 0;    // s
  double bandwidth = 0;  // bytes/s; 0: bytes cost nothing
  double seconds(double bytes) const { return latency + (bandwidth > 0 ? bytes / bandwidth : 0); }
};

inline LinearFit fit_line(const std::vector<double>& bytes, const std::vector<double>& seconds) {
  const double n = double(bytes.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    sx += bytes[i];
    sy += seconds[i];
    sxx += bytes[i] * bytes[i];
    sxy += bytes[i] * seconds[i];
  }
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  LinearFit f;
  f.bandwidth = slope > 0 ? 1 / slope : 0;
  f.latency = std::max(0.0, (sy - (slope > 0 ? slope : 0) * sx) / n);
  return f;
}

// What the cost model knows of this machine, per rank, with all ranks busy at once.
struct Calibration {
  int ranks = 1;          // ranks that ran at once
  double gemm_flops = 0;  // sgemm FLOP/s of one rank at the model's shapes
  // seconds of one microbatch in a layer's kernels besides its linear layers, and in the loss
  double layer_kernels_s = 0, head_kernels_s = 0;
  double fill_bytes = 0;  // bytes/s of zero-filling Buffers as a stash fills
  double adamw_rate = 0;  // AdamW element updates per second
  // (operation, group size) -> its cost; CommOp::send is one point-to-point message. `calls`
  // were measured after a short compute (a few ms), `loop_calls` after the run's own compute
  // between two calls of its microbatch loop, gap_s.
  using Calls = std::map<std::pair<CommOp, int>, LinearFit>;
  Calls calls, loop_calls;
  double gap_s = 0;

  // The loop's fit when `in_loop` and measured, else the short-compute one.
  LinearFit call(CommOp op, int group, bool in_loop = false) const {
    if (in_loop && loop_calls.count({op, group})) return loop_calls.at({op, group});
    auto it = calls.find({op, group});
    require(it != calls.end(), "calibration: no measurement of " + std::string(to_string(op)) +
                                   " over " + std::to_string(group) + " ranks");
    return it->second;
  }
};

namespace detail {
using backend::detail::time_together;
}  // namespace detail

// One rank's share of a microbatch through a layer: N = B seq rows (n of them in the LayerNorm
// regions), hidden C, Cl = C / t columns and Hl = H / t heads of D on this rank; the head's
// vocab_rows of the vocabulary. Under CP seq is the rank's tokens of each sequence, split as
// `split` over a ring of cp ranks.
struct LayerShape {
  int B = 1, seq = 1, C = 1, Cl = 1, Hl = 1, D = 1, n = 1, vocab_rows = 1;
  int cp = 1;
  CpSplit split = CpSplit::zigzag;
  int N() const { return B * seq; }
};

// The ring of attention for shape s: cp consecutive ranks of `world` (none when CP = 1).
struct CalibrationRing {
  Comm comm;
  ContextParallel<backend::Cpu> cp;
  CalibrationRing(const Comm& world, const LayerShape& s)
      : comm(world.split(world.rank() / s.cp, world.rank(), "calibrate")) {
    cp.split = s.split;
    if (s.cp > 1) cp.ring = backend::DeviceComm<backend::Cpu>(comm, backend::CollectivePath::mpi);
  }
};

// Seconds per microbatch of trident's kernels other than the linear layers' GEMMs, forward and
// backward, every rank at once: a layer's two LayerNorms, its attention core (the per-head
// softmax(Q K^T / sqrt(D)) V with its small products), GELU, and the passes over its residual
// stream (n, C) — which every TP rank makes in full: per half, the forward's copy out of the
// all-reduce, bias and residual adds, the backward's bias gradient and residual add
// (models/gpt2/block.hpp, tp/linear.hpp); the head's cross-entropy. Under CP the attention core
// is the ring's (cp/attention.hpp) over groups of cp consecutive ranks: its blocks' transfers
// and the waits the slowest rank of a ring leaves the others are in the figure.
inline std::pair<double, double> measure_kernel_seconds(const Comm& world, const LayerShape& s) {
  const int N = s.N(), V = s.vocab_rows;
  const CalibrationRing ring(world, s);
  require(world.size() % s.cp == 0, "calibration: CP=" + std::to_string(s.cp) +
                                        " does not divide " + std::to_string(world.size()) +
                                        " ranks");
  std::vector<float> x(std::size_t(s.n) * s.C, 0.1f), y(x.size()), dx(x.size()),
      stats(2 * std::size_t(s.n));
  std::vector<float> w(s.C, 1.f), dw(s.C), db(s.C);
  std::vector<float> qkv(std::size_t(N) * 3 * s.Hl * s.D, 0.01f), dqkv(qkv.size());
  std::vector<float> att(std::size_t(N) * s.Hl * s.D), datt(att.size(), 0.01f);
  std::vector<float> probs(std::size_t(s.B) * s.Hl * s.seq * s.seq * s.cp),
      fc(std::size_t(N) * 4 * s.Cl, 0.1f), act(fc.size());
  std::vector<float> logits(std::size_t(N) * V, 0.01f), losses(N);
  std::vector<std::int32_t> targets(N, 0);
  const int reps = 4;
  const double layer = detail::time_together(world, 3, [&] {
    for (int r = 0; r < reps; ++r)
      for (int ln = 0; ln < 2; ++ln) {
        nn::layernorm_forward(y.data(), stats.data(), stats.data() + s.n, x.data(), w.data(),
                              db.data(), s.n, s.C);
        nn::layernorm_backward(dx.data(), dw.data(), db.data(), y.data(), x.data(), w.data(),
                               stats.data(), stats.data() + s.n, s.n, s.C);
        if (ln == 0)
          attention_forward(ring.cp, att.data(), probs.data(), qkv.data(), s.B, s.seq, s.Hl, s.Hl,
                            s.D);
        if (ln == 0)
          attention_backward(ring.cp, dqkv.data(), datt.data(), qkv.data(), att.data(),
                             probs.data(), s.B, s.seq, s.Hl, s.Hl, s.D);
        if (ln == 1) nn::gelu_forward(act.data(), fc.data(), fc.size());
        if (ln == 1) nn::gelu_backward(act.data(), act.data(), fc.data(), fc.size());
        MatMap<float> out(dx.data(), s.n, s.C);
        out = CMatMap<float>(y.data(), s.n, s.C);        // copy out of g
        out.rowwise() += CRowMap<float>(w.data(), s.C);  // bias
        VecMap<float>(y.data(), y.size()) =
            CVecMap<float>(x.data(), x.size()) + CVecMap<float>(dx.data(), dx.size());
        RowMap<float>(db.data(), s.C) += CMatMap<float>(y.data(), s.n, s.C).colwise().sum();
        VecMap<float>(dx.data(), dx.size()) =
            CVecMap<float>(x.data(), x.size()) + CVecMap<float>(y.data(), y.size());
      }
  });
  const double head = detail::time_together(world, 3, [&] {
    for (int r = 0; r < reps; ++r) {
      nn::cross_entropy_forward(losses.data(), logits.data(), logits.data(), targets.data(), N, V,
                                0, V);
      nn::cross_entropy_backward(logits.data(), logits.data(), targets.data(), 1e-3f, N, V, 0);
    }
  });
  return {layer / reps, head / reps};
}

// Bytes/s of filling Buffers the way a microbatch's stash is filled: `held` zero-filled
// Buffers of `bytes` each allocated one after the other, then all freed, every rank at once.
// Freed blocks are kept for reuse (core/memory.hpp), as between the microbatches of a step.
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
LinearFit measure_after_work(const Comm& world, const std::vector<std::size_t>& sizes, Work&& work,
                             Call&& call, int cycles = 6, int reps = 7) {
  const double alone = detail::time_together(world, reps, [&] {
    for (int c = 0; c < cycles; ++c) work();
  });
  std::vector<double> xs, ys;
  for (std::size_t bytes : sizes) {
    const double with = detail::time_together(world, reps, [&] {
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

// One call over groups of `group` consecutive ranks (all groups at once), after work: a
// collective, or (CommOp::send) a message from each group's first rank to its second.
template <class Work>
LinearFit measure_call(const Comm& world, CommOp op, int group,
                       const std::vector<std::size_t>& sizes, Work&& work) {
  const Comm g = world.split(world.rank() / group, world.rank(), "calibrate");
  return measure_after_work(world, sizes, work, [&](std::size_t bytes) {
    const std::size_t n = std::max<std::size_t>(bytes / sizeof(float) / group, 1) * group;
    Buffer<float> full(MemoryKind::buffers, n), shard(MemoryKind::buffers, n / group);
    const Span<float> all(full.data(), n), part(shard.data(), n / group);
    if (g.size() < group) return;  // the last, incomplete group
    if (op == CommOp::all_reduce) g.all_reduce(all);
    if (op == CommOp::reduce_scatter) g.reduce_scatter(Span<const float>(all), part);
    if (op == CommOp::all_gather) g.all_gather(Span<const float>(part), all);
    if (op == CommOp::send && g.rank() == 0)
      g.send(Span<const float>(all), 1, message_tags::kCalibration);
    if (op == CommOp::send && g.rank() == 1) g.recv(all, 0, message_tags::kCalibration);
  });
}

// The compute rates at a microbatch's shape, the GEMM's at its MLP (N x C times C x 4 Cl) over
// `working_set` bytes per rank. Collective.
inline Calibration calibrate_compute(const Comm& world, const LayerShape& shape,
                                     double working_set = 0) {
  Calibration c;
  c.ranks = world.size();
  c.gemm_flops =
      backend::measure_gemm_flops<float>(world, shape.N(), shape.C, 4 * shape.Cl, working_set);
  std::tie(c.layer_kernels_s, c.head_kernels_s) = measure_kernel_seconds(world, shape);
  c.fill_bytes = measure_fill_bandwidth(world, std::size_t(1) << 20, 32);
  c.adamw_rate = measure_adamw_rate(world, std::size_t(1) << 20);
  return c;
}

// Fits of the calls (operation, group size) not in `known`, each measured after `work_s`
// seconds of 256 x 256 x 1024 GEMMs (at least one, ~0.13 GFLOP) at `gemm_flops`, at 4 KiB,
// 1 MiB and 4 MiB; a call whose groups span nodes (more ranks than a node holds) at 4 KiB,
// largest_crossing / 4 and largest_crossing when that is smaller: where a slow link prices its
// bytes (inter_node.hpp's over_link) only its latency is wanted, and 4 MiB calls over a
// 100 Mbit/s link would take minutes. One to three seconds per call. Collective. The
// communicators are named "calibrate" in comm_stats(); its barriers and maxima count as
// "world": reset the counters before measuring a run.
inline void measure_calls(const Comm& world, Calibration::Calls& known,
                          const std::vector<std::pair<CommOp, int>>& calls, double gemm_flops,
                          double work_s, std::size_t largest_crossing = std::size_t(4) << 20) {
  std::vector<std::pair<CommOp, int>> missing;
  for (const auto& [op, group] : calls)
    if (group >= 2 && group <= world.size() && !known.count({op, group}))
      missing.emplace_back(op, group);
  if (missing.empty()) return;  // the same on every rank: no communicator made, nothing timed
  const int rows = 256, inner = 256, cols = 1024;
  std::vector<float> x(std::size_t(rows) * inner, 0.5f), w(std::size_t(inner) * cols, 0.25f);
  std::vector<float> y(std::size_t(rows) * cols);
  const int reps = std::max(1, int(std::lround(work_s * gemm_flops / (2.0 * rows * inner * cols))));
  auto work = [&] {
    for (int r = 0; r < reps; ++r)
      backend::gemm<float>(backend::view(y.data(), rows, cols),
                           backend::cview(x.data(), rows, inner),
                           backend::cview(w.data(), inner, cols), false, false, 0.f);
  };
  const int node_ranks = node_comm(world).size();
  for (const auto& [op, group] : missing)
    if (!known.count({op, group})) {  // listed twice
      const std::size_t largest = group > node_ranks
                                      ? std::min(largest_crossing, std::size_t(4) << 20)
                                      : std::size_t(4) << 20;
      known[{op, group}] =
          measure_call(world, op, group, {std::size_t(4) << 10, largest / 4, largest}, work);
    }
}

}  // namespace trident::costmodel
