// trident/costmodel/measured.hpp: a trident run measured the way the cost model predicts it —
// memory per rank by kind (MemoryStats), bytes per step per axis (CommStats), the step time and
// the pipeline bubble; and this machine calibrated for the run (calibrate.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "../core/wire.hpp"
#include "../train/report.hpp"
#include "predict.hpp"

namespace trident::costmodel {

// the paper planner's formulas, shapes and presets, which this model builds on
using namespace plan;

struct MeasuredRun {
  RunReport report;   // per rank (world rank 0): memory by kind, traffic per axis, bubble
  double step_s = 0;  // mean over the measured steps of the slowest rank's step
  double loss = 0;    // of the last step
  double wire = 0;    // bytes per step sent over the links between nodes, all nodes (wire.hpp)
  // per rank (world rank 0), seconds per step inside each axis' calls and waits (CommStats)
  std::vector<std::array<double, 5>> comm_s;  // tp, pp, dp (over DP x CP), emb, world
};

// `steps` measured steps of trainer t, from here (the counters reset first). Collective; the
// report is complete on world rank 0.
template <class T, class S>
MeasuredRun measure_steps(const Comm& world, gpt2::Trainer<T, S>& t, int steps) {
  require(steps >= 1, "measure_steps: at least one measured step");
  const ReportWindow window(t);
  std::vector<StepResult> results;
  MeasuredRun run;
  const double wire_before = world_wire_sent(world);
  for (int s = 0; s < steps; ++s) {
    results.push_back(t.step());
    run.step_s += world.all_reduce_value(results.back().seconds, ReduceOp::max) / steps;
    run.loss = results.back().loss;
  }
  run.wire = (world_wire_sent(world) - wire_before) / steps;
  std::array<double, 5> mine{};
  const char* axes[5] = {"tp", "pp", "dp", "emb", "world"};
  for (int k = 0; k < 5; ++k) mine[k] = comm_stats().of(axes[k]).total().seconds / steps;
  mine[2] += comm_stats().of("dp_cp").total().seconds / steps;  // DP x CP's reductions (CP > 1)
  run.report = window.report(t, results);
  std::vector<double> all(5 * std::size_t(world.size()));
  world.all_gather(Span<const double>(mine.data(), 5), Span<double>(all));
  for (int r = 0; r < world.size(); ++r)
    run.comm_s.push_back(
        {all[5 * r], all[5 * r + 1], all[5 * r + 2], all[5 * r + 3], all[5 * r + 4]});
  return run;
}

// Builds the trainer, runs `warmup` steps, then `steps` measured ones (counters reset between).
// Collective; the report is complete on world rank 0.
template <class T, class S>
MeasuredRun measure_run(const Comm& world, const gpt2::Options& o, const TokenSource& data,
                        int steps, int warmup = 1) {
  require(steps >= 1 && warmup >= 0, "measure_run: at least one measured step");
  gpt2::Trainer<T, S> t(world, o, data);
  for (int s = 0; s < warmup; ++s) (void)t.step();
  return measure_steps(world, t, steps);
}

// One rank's share of a microbatch of run `o` through a layer.
inline LayerShape layer_shape(const gpt2::Options& o) {
  const ActivationShape a = activation_shape(o);
  const int t = o.mesh.tp;
  return {
      o.rows_per_microbatch(), int(a.seq), o.model.hidden,    o.model.hidden / t, o.model.heads / t,
      o.model.head_size(),     int(a.n),   int(a.vocab_rows), o.mesh.cp,          o.cp_split};
}

// This machine calibrated for run `o`, on every rank of `world` at once: the compute rates at
// the run's shapes and working set; the calls after its loop, after a short compute (kept from
// `previous`, an earlier run's calibration, when it has them); the calls of its loop after the
// run's own compute between two of them (a microbatch's compute over the calls it waits for). That
// gap is capped at 20 ms to keep the calibration to seconds: a rank waits longer for group members
// the scheduler has not run after longer compute, so runs with fewer, longer gaps (pipelines
// without TP) come out somewhat under-predicted. Calls whose groups span nodes are measured up
// to `largest_crossing` bytes (calibrate.hpp's measure_calls). Collective; a few seconds.
inline Calibration calibrate_run(const Comm& world, const gpt2::Options& o, const Precision& p,
                                 const Calibration* previous = nullptr,
                                 std::size_t largest_crossing = std::size_t(4) << 20) {
  double working_set = 0;  // the largest stage's model states and activations, bytes per rank
  for (int stage = 0; stage < o.mesh.pp; ++stage)
    working_set = std::max(
        working_set, stage_model_states(o, stage, p).total() + stage_activation_bytes(o, stage, p));
  Calibration c = calibrate_compute(world, layer_shape(o), working_set);
  if (previous) c.calls = previous->calls;
  measure_calls(world, c.calls, after_calls(o), c.gemm_flops, 0, largest_crossing);
  // count the waits of a microbatch: every loop call one second, every other cost nothing
  Calibration count = c;
  for (auto& call : count.calls) call.second = LinearFit{};
  for (const auto& call : loop_calls(o)) count.loop_calls[call] = LinearFit{1, 0};
  double gap = 0.020;
  for (const StagePrediction& st : predict(o, p, measured_machine(count)).stages) {
    const double compute = st.compute_s / o.microbatches;
    gap = std::min(gap, compute / std::max(1.0, st.microbatch_s - compute));
  }
  c.gap_s = gap;
  measure_calls(world, c.loop_calls, loop_calls(o), c.gemm_flops, gap, largest_crossing);
  return c;
}

}  // namespace trident::costmodel

#ifdef TRIDENT_PREBUILT_INSTANCES  // compiled once in instances/ (models/gpt2/trainer.hpp)
extern template trident::costmodel::MeasuredRun trident::costmodel::measure_run<float, float>(
    const trident::Comm&, const trident::gpt2::Options&, const trident::TokenSource&, int, int);
extern template trident::costmodel::MeasuredRun
trident::costmodel::measure_run<float, trident::bf16>(const trident::Comm&,
                                                      const trident::gpt2::Options&,
                                                      const trident::TokenSource&, int, int);
extern template trident::costmodel::MeasuredRun trident::costmodel::measure_steps<float, float>(
    const trident::Comm&, trident::gpt2::Trainer<float, float>&, int);
#endif
