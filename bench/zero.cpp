// bench/zero: data parallelism with ZeRO stages 0-3 at DP=2 — training next to the single
// process, and each stage's measured memory and DP traffic next to the formulas, in one run.
//
//   mpiexec -n 2 ./bench_zero [--train-seconds 30]                   (one thread per rank)
//
// Memory: MemoryStats (core/memory.hpp) after a step, model states next to the ZeRO paper's
// (2 + 2 + K) Psi split by stage (Rajbhandari et al. 2020, §5.1; train/formulas.hpp), and the
// peak of communication buffers (ZeRO-3's gathered units live there). Traffic: CommStats bytes
// on the "dp" communicator per step next to the formula (ZeRO paper §7.2, CommStats' convention:
// the whole logical buffer of each call) and CommStats seconds (time inside DP calls and waits:
// the communication that backward did not hide). Overlap: per stage, the DP communication
// exposed per step next to all of it: the same trainer steps with overlap and without
// (overlap_communication() = false: every nonblocking operation completes where it starts),
// interleaved; CommStats seconds on "dp" are the exposed time in the first and the whole time
// in the second; their difference is what computation hid; and a third trainer reducing after
// the backward on the shared-memory path (GradOverlap::at_end, the default on one node). Training:
// the bench model, one microbatch per rank, the single process on world rank 0 alone, all variants
// interleaved step by step.
#include <trident/io/cli.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/train/formulas.hpp>
#include <trident/trident.hpp>

#include "bench_util.hpp"

using namespace trident;
using namespace bench;

namespace {

gpt2::Options zero_options(int stage) {
  gpt2::Options o = bench_options({1, 1, 2});
  o.zero.stage = stage;
  return o;
}

// One stage's memory and traffic on this rank (both ranks are alike); one trainer alive at a time.
void memory_row(const Comm& world, int stage) {
  BenchTrainer t(world, zero_options(stage), TokenSource::synthetic(bench_model().vocab));
  (void)t.step();
  comm_stats().reset();
  memory_stats().reset_peaks();
  const int steps = 2;
  for (int s = 0; s < steps; ++s) (void)t.step();
  const MemoryStats& m = memory_stats();
  const ModelStates f = model_state_formula(t);
  const OpCount dp = comm_stats().of("dp").total();
  const double MiB = 1024.0 * 1024.0, bytes = double(dp.bytes) / steps;
  auto cur = [&](MemoryKind k) { return double(m.current(k)) / MiB; };
  if (world.rank() == 0)
    std::printf(
        "ZeRO-%d %8.2f /%6.2f %7.2f /%6.2f %7.2f /%6.2f %8.2f /%6.2f %9.2f %8.2f /%6.2f %8.1f\n",
        stage, cur(MemoryKind::parameters), f.parameters / MiB, cur(MemoryKind::gradients),
        f.gradients / MiB, cur(MemoryKind::optimizer), f.optimizer / MiB,
        (cur(MemoryKind::parameters) + cur(MemoryKind::gradients) + cur(MemoryKind::optimizer)),
        f.total() / MiB, double(m.peak(MemoryKind::buffers)) / MiB, bytes / MiB,
        traffic_formula(t).dp / MiB, dp.seconds / steps * 1e3);
  std::fflush(stdout);
}

// One stage's step and DP communication, interleaved for `seconds`: the reductions overlapped
// with the backward (GradOverlap::overlapped), the same trainer with every operation completed
// where it starts, and the reductions after the backward (GradOverlap::at_end: the shared-memory
// path; at stages 2-3 the per-microbatch reductions stay overlapped in both).
void overlap_row(const Comm& world, int stage, double seconds) {
  gpt2::Options o = zero_options(stage);
  o.zero.overlap = GradOverlap::overlapped;
  BenchTrainer t(world, o, TokenSource::synthetic(bench_model().vocab));
  o.zero.overlap = GradOverlap::at_end;
  BenchTrainer at_end(world, o, TokenSource::synthetic(bench_model().vocab));
  std::vector<double> dp_seconds[3];  // [variant]
  auto variant = [&](int k, BenchTrainer& trainer, bool overlap) {
    return [&, k, overlap] {
      overlap_communication() = overlap;
      comm_stats().reset();
      const double step = step_seconds(world, trainer);  // after the step: not counted
      dp_seconds[k].push_back(slowest(world, comm_stats().of("dp").total().seconds));
      overlap_communication() = true;
      return step;
    };
  };
  const Timings timings = interleaved(
      world, seconds, {variant(0, t, true), variant(1, t, false), variant(2, at_end, true)});
  for (std::vector<double>& v : dp_seconds) v.erase(v.begin());  // the warm-up
  const double exposed = median(dp_seconds[0]), total = median(dp_seconds[1]);
  if (world.rank() == 0)
    std::printf("ZeRO-%d %5zu %12.1f %12.1f %12.1f %12.1f %12.1f %8.0f%% %12.1f %12.1f %8.2f\n",
                stage, timings.seconds[0].size(), timings.median(0) * 1e3, timings.median(1) * 1e3,
                exposed * 1e3, total * 1e3, (total - exposed) * 1e3,
                100 * (total - exposed) / total, timings.median(2) * 1e3,
                median(dp_seconds[2]) * 1e3, timings.ratio(0, 2));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    double train_seconds = 30, overlap_seconds = 10;
    cli::App app{
        "ZeRO stages at DP=2: training next to one process, memory and traffic next to formulas."};
    app.add_option("--train-seconds", train_seconds, "time for the training rows")
        ->capture_default_str();
    app.add_option("--overlap-seconds", overlap_seconds, "time for each overlap row")
        ->capture_default_str();
    parse_command_line(app, argc, argv, world);
    require(world.size() == 2, "bench_zero runs on 2 ranks: mpiexec -n 2 ./bench_zero");
    configure_threads(world, 1);

    const gpt2::Config c = bench_model();
    if (world.rank() == 0) {
      std::printf(
          "# bench_zero: DP=2, 1 thread per rank; bench model V=%d T=%d L=%d C=%d H=%d "
          "(%lld parameters), global batch %d, float, %s\n",
          c.vocab, c.seq, c.layers, c.hidden, c.heads, c.parameter_count(), kBatch,
          load_average().c_str());
      std::printf(
          "# MiB per rank, measured / formula; DP traffic per step (CommStats bytes); "
          "DP ms: time inside DP calls and their waits per step (CommStats seconds)\n");
      std::printf("%-6s %15s %14s %14s %15s %9s %15s %8s\n", "stage", "parameters", "gradients",
                  "optimizer", "model states", "comm bufs", "DP traffic", "DP ms");
    }
    for (int stage = 0; stage <= 3; ++stage) memory_row(world, stage);

    if (world.rank() == 0)
      std::printf(
          "\n# DP communication per step (CommStats seconds on dp, slowest rank, median): "
          "exposed with overlap, total without it (every operation completed where it starts); "
          "end: the reductions after the backward (--overlap-grad-reduce off, shared memory); "
          "overlap/end: step time ratio\n"
          "%-6s %5s %12s %12s %12s %12s %12s %9s %12s %12s %8s\n",
          "stage", "reps", "step_ms", "step_ms_ser", "exposed_ms", "total_ms", "hidden_ms",
          "hidden", "step_ms_end", "dp_ms_end", "ovl/end");
    for (int stage = 0; stage <= 3; ++stage) overlap_row(world, stage, overlap_seconds);

    std::vector<std::unique_ptr<BenchTrainer>> trainers;
    std::vector<std::pair<std::string, BenchTrainer*>> rows;
    for (int stage = 0; stage <= 3; ++stage) {
      trainers.push_back(std::make_unique<BenchTrainer>(world, zero_options(stage),
                                                        TokenSource::synthetic(c.vocab)));
      rows.push_back({"DP=2, ZeRO-" + std::to_string(stage), trainers.back().get()});
    }
    if (world.rank() == 0) std::printf("\n");
    training_table(world, train_seconds, bench_options(), rows);
    return 0;
  });
}
