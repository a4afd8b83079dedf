// examples/long_context: a long sequence — what fits and how fast with tensor parallelism alone,
// with sequence parallelism and full recomputation, and with context parallelism.
//
//   mpiexec -n 4 ./long_context [--seq 4096] [--memory-mib 160] [--steps 2] [--svg ring.svg]
//
// One GPT (L=2, C=128, H=2, T=4096 by default) on the world's ranks, TP as wide as the heads
// allow (t), the other ranks used three ways: data parallelism (TP alone, then with SP and full
// recomputation: Korthikanti et al. 2022) and context parallelism (ring attention, Liu et al.
// 2023; zigzag and contiguous splits). Each run takes its smallest batch: --batch sequences per
// data-parallel rank, whose T tokens DP cannot split, against --batch sequences for the whole CP
// group, each rank holding T / cp tokens of it; tokens/s compares their speed per token. Each run
// is measured (MemoryStats, CommStats, its steps' clock) next to the cost model calibrated here
// (costmodel/predict.hpp, to the byte for memory and traffic) and the paper's formula
// (plan/memory.hpp: Korthikanti's Table 2 with s / cp tokens per rank). A run fits when its model
// states and peak activations fit --memory-mib per rank. --svg draws one step of the ring on the
// first CP run's ranks: each block's computation and the next block in transit under it
// (cp/ring_trace.hpp).
#include <algorithm>
#include <cstdio>
#include <trident/costmodel/measured.hpp>
#include <trident/costmodel/predict.hpp>
#include <trident/cp/ring_trace.hpp>
#include <trident/io/cli.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/pp/svg.hpp>
#include <trident/trident.hpp>

#include "comparison.hpp"

using namespace trident;
using namespace trident::costmodel;
using namespace trident::examples;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

struct Flags {
  gpt2::Config model{256, 4096, 2, 128, 2, 1234};
  int batch = 1, steps = 2;  // batch: sequences per DP rank (per CP group)
  double memory_mib = 160;
  std::string svg;
};

// TP as wide as the heads allow, t; the other ranks: DP (alone, then with SP and full
// recomputation), or CP with either split.
std::vector<NamedRun> long_context_runs(const Flags& f, int world) {
  int t = std::min(world, f.model.heads);
  while (world % t || f.model.heads % t) --t;
  const int rest = world / t;
  const std::string tp = "TP" + std::to_string(t), others = std::to_string(rest);
  auto run = [&](std::string name, MeshShape mesh) {
    gpt2::Options o;
    o.model = f.model;
    o.mesh = mesh;
    o.batch = f.batch * mesh.dp;
    o.microbatches = 1;
    o.zero.stage = 1;
    return NamedRun{std::move(name), o};
  };
  std::vector<NamedRun> runs{run(rest > 1 ? tp + "-DP" + others : tp, {t, 1, rest})};
  runs.push_back(run(runs[0].name + " SP recompute", {t, 1, rest}));
  runs[1].options.sequence_parallel = t > 1;
  runs[1].options.recompute = Recompute::full;
  const MeshShape cp = rest > 1 ? MeshShape{t, 1, 1, rest} : MeshShape{1, 1, 1, world};
  const std::string name = rest > 1 ? tp + "-CP" + others : "CP" + std::to_string(world);
  if (cp.cp > 1) {
    runs.push_back(run(name + " zigzag", cp));
    runs.push_back(run(name + " contiguous", cp));
    runs.back().options.cp_split = CpSplit::contiguous;
  }
  return runs;
}

struct Result {
  NamedRun run;
  Prediction predicted;
  MeasuredRun measured;
  double paper = 0;  // Korthikanti et al. 2022's activations per rank, float
};

template <class F>
double most(const Result& r, F&& f) {
  double m = 0;
  for (const RankFigures& k : r.measured.report.ranks) m = std::max(m, f(k));
  return m;
}

void print_memory(const std::vector<Result>& results, const Flags& f) {
  std::printf(
      "\nmemory per rank, MiB (the most loaded rank): activations measured (MemoryStats' peak) / "
      "the cost model (trident's buffers, costmodel/trident_memory.hpp) / the paper "
      "(Korthikanti et al. 2022, Table 2 with s/cp tokens per rank, 4-byte values: "
      "plan/memory.hpp; it also counts dropout's masks and outputs, which trident has none of); "
      "model states (ZeRO-1); fits: states + activations <= %.0f MiB\n",
      f.memory_mib);
  std::printf("%-28s %5s %10s %10s %10s %9s %9s %6s\n", "run", "batch", "measured", "model",
              "paper", "states", "total", "fits");
  for (const Result& r : results) {
    const double act = most(r, [](const RankFigures& k) { return k.activations; });
    const double states =
        most(r, [](const RankFigures& k) { return k.parameters + k.gradients + k.optimizer; });
    std::printf("%-28s %5d %10.2f %10.2f %10.2f %9.2f %9.2f %6s\n", r.run.name.c_str(),
                r.run.options.batch, act / kMiB, r.predicted.stages[0].activations / kMiB,
                r.paper / kMiB, states / kMiB, (act + states) / kMiB,
                act + states <= f.memory_mib * kMiB ? "yes" : "no");
  }
}

void print_speed(const std::vector<Result>& results, const Flags& f) {
  std::printf(
      "\nspeed: tokens/s measured (mean of %d steps' slowest rank, after one warm-up) and vs the "
      "first run; step s measured / predicted (the cost model calibrated on these ranks, the "
      "ring's attention core included); CP ring MiB per rank per step measured / formula "
      "((cp-1) K,V blocks forward, 2(cp-1) backward, one more pass with recomputation); exposed: "
      "the ring's waits over the step (most of any rank); busy: forward/backward seconds less the "
      "ring's waits, max/min over the ranks\n",
      f.steps);
  std::printf("%-28s %9s %6s %9s %9s %6s %19s %8s %6s\n", "run", "tokens/s", "vs #1", "step s",
              "predicted", "ratio", "CP ring MiB", "exposed", "busy");
  const Result& first = results.front();
  for (const Result& r : results) {
    const MeasuredRun& m = r.measured;
    const RankFigures& k = m.report.ranks.front();
    double busy_max = 0, busy_min = 1e300;
    for (const RankFigures& x : m.report.ranks) {
      busy_max = std::max(busy_max, x.compute - x.cp_wait);
      busy_min = std::min(busy_min, x.compute - x.cp_wait);
    }
    const double tokens = double(r.run.options.batch) * f.model.seq / m.step_s;
    std::printf(
        "%-28s %9.0f %6.2f %9.3f %9.3f %6.2f %8.3f / %-8.3f %7.1f%% %6.2f\n", r.run.name.c_str(),
        tokens, tokens / (double(first.run.options.batch) * f.model.seq / first.measured.step_s),
        m.step_s, r.predicted.step_s, r.predicted.step_s / m.step_s, k.traffic.cp / kMiB,
        k.formula.cp / kMiB,
        m.step_s > 0 ? 100 * most(r, [](const RankFigures& x) { return x.cp_wait; }) / m.step_s
                     : 0.0,
        busy_min > 0 ? busy_max / busy_min : 0.0);
  }
}

// One step of run o with the ring traced, drawn: rows are the CP ranks of TP rank 0 and DP rank
// 0; a box is a block's computation, numbered by the rank whose keys and values it holds; the
// grey bar under it the next block (and, backward, the travelling dK, dV) in transit.
void draw_ring(const Comm& world, const NamedRun& run, const TokenSource& data,
               const std::string& path) {
  gpt2::Trainer<float, float> t(world, run.options, data);
  (void)t.step();
  ring_trace().start();
  (void)t.step();
  ring_trace().stop();
  std::vector<double> mine;
  for (const RingStep& s : ring_trace().steps())
    mine.insert(mine.end(),
                {double(s.backward), double(s.source), double(s.step < t.mesh().shape().cp - 1),
                 s.posted, s.begin, s.computed, s.arrived});
  std::vector<double> all(mine.size() * std::size_t(world.size()));
  world.all_gather(Span<const double>(mine), Span<double>(all));
  if (world.rank() != 0) return;
  const MeshShape& shape = t.mesh().shape();
  pp::Timeline line;
  line.ranks = shape.cp;
  for (int c = 0; c < shape.cp; ++c) {
    const std::size_t rank = std::size_t(shape.tp) * c, n = mine.size();  // tp 0, dp 0
    for (std::size_t i = rank * n; i < (rank + 1) * n; i += 7) {
      const double* s = &all[i];
      const auto kind = s[0] ? pp::IntervalKind::backward : pp::IntervalKind::forward;
      line.intervals.push_back({c, kind, int(s[1]), 0, s[4], s[5]});
      if (s[2]) line.intervals.push_back({c, pp::IntervalKind::recv, int(s[1]), 0, s[3], s[6]});
    }
  }
  const double t0 = line.start();  // milliseconds from the step's first block
  for (pp::Interval& i : line.intervals) {
    i.begin = 1e3 * (i.begin - t0);
    i.end = 1e3 * (i.end - t0);
  }
  pp::SvgOptions svg;
  svg.row_label = "CP rank";
  svg.numbered = "K,V block of rank";
  svg.time_unit = "ms";
  svg.caption =
      "measured: each block's computation (F forward, B backward) and the next block "
      "in transit";
  pp::write_timeline_svg(path, line, "ring attention, one step of " + run.name, svg);
  std::printf("\nwrote %s: one step of %s's ring, every layer's forward and backward\n",
              path.c_str(), run.name.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    Flags f;
    cli::App app{"A long sequence: TP alone, TP + SP + recomputation, and TP + CP, measured."};
    add_model_options(app, f.model);
    app.add_option("--batch", f.batch, "sequences per data-parallel rank or CP group")
        ->capture_default_str();
    app.add_option("--steps", f.steps, "measured steps per run")->capture_default_str();
    app.add_option("--memory-mib", f.memory_mib, "memory per rank a run must fit")
        ->capture_default_str();
    app.add_option("--svg", f.svg, "draw one step of the first CP run's ring here");
    parse_command_line(app, argc, argv, world);
    require(f.steps >= 1, "--steps must be at least 1, got " + std::to_string(f.steps));
    require(f.batch >= 1, "--batch must be at least 1, got " + std::to_string(f.batch));
    require(world.size() >= 2, "long_context compares parallel runs: mpiexec -n 2 or more");
    const std::vector<NamedRun> runs = long_context_runs(f, world.size());
    for (const NamedRun& run : runs) validate(run.options, world.size());  // before any run
    const int threads = configure_threads(world);
    if (world.rank() == 0)
      std::printf(
          "# long_context: %d ranks x %d thread(s) on %d cores; GPT L=%d C=%d H=%d V=%d "
          "T=%d, %d sequence(s) per DP rank or CP group; float\n",
          world.size(), threads, cores_available(), f.model.layers, f.model.hidden, f.model.heads,
          f.model.vocab, f.model.seq, f.batch);
    const TokenSource data = TokenSource::synthetic(f.model.vocab);
    const Precision precision = trident_precision<float, float>();
    std::vector<Result> results;
    Calibration cal;
    for (const NamedRun& run : runs) {
      cal = calibrate_run(world, run.options, precision, &cal);
      Result r{run, predict(run.options, precision, measured_machine(cal)),
               measure_run<float, float>(world, run.options, data, f.steps)};
      r.paper = plan::activation_bytes(gpt2::model_spec(run.options.model),
                                       plan_config(run.options), plan::Precision::fp32());
      results.push_back(std::move(r));
    }
    if (world.rank() == 0) {
      print_memory(results, f);
      print_speed(results, f);
    }
    if (!f.svg.empty() && runs.size() > 2) draw_ring(world, runs[2], data, f.svg);
    return 0;
  });
}
