// bench/cp: context parallelism at CP=2 on a long sequence — the zigzag and the contiguous split
// next to the single process and to TP=2, in one run, and each CP rank's time computing and
// waiting for the ring; at CP=4 (4 ranks) the balance rows alone.
//
//   mpiexec -n 2 ./bench_cp [--seq 2048] [--train-seconds 20]       (one thread per rank)
//   mpiexec -n 4 ./bench_cp --seq 2048                              (CP=4: balance only)
//
// Model: GPT-2 with V=4096, L=2, C=128, H=4, a global batch of 2 sequences of --seq tokens,
// float. Training rows: interleaved repetitions (bench_util.hpp; the single process on world
// rank 0 alone while rank 1 sleeps); each variant runs two steps and times the second, so that
// the allocator's cache, left holding the previous variant's blocks (a trainer's step here moves
// a GiB of activations), is refilled before the timed step. Balance rows: per CP rank, over 3
// steps, the time waited for the ring's blocks (the communication the blocks' computation did not
// hide: CommStats' "cp" seconds) and the rest of the step (computing), and the time in the ring's
// block kernels alone (cp/ring_trace.hpp: the attention work, whatever else the step does); their
// max/min over the ranks is the split's load balance (zigzag: every rank the same causal attention
// work; contiguous: the last rank's queries see every key, the first's a 1/cp). With more ranks
// than cores the ranks share them, which stretches every rank's times alike.
#include <trident/cp/ring_trace.hpp>
#include <trident/io/cli.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/trident.hpp>

#include "bench_util.hpp"

using namespace trident;
using namespace bench;

namespace {

gpt2::Options long_options(int seq, MeshShape mesh, CpSplit split = CpSplit::zigzag) {
  gpt2::Options o = bench_options(mesh);
  o.model = {4096, seq, 2, 128, 4, 1234};
  o.batch = 2;
  o.cp_split = split;
  return o;
}

// Each CP rank's waited, busy and attention-block seconds per step over `steps` steps; printed
// on rank 0.
void balance_row(const Comm& world, const char* name, BenchTrainer& t, int steps) {
  comm_stats().reset();
  ring_trace().start();
  double step = 0;
  for (int s = 0; s < steps; ++s) step += t.step().seconds / steps;
  ring_trace().stop();
  const double waited = comm_stats().of("cp").total().seconds / steps;
  double blocks = 0;
  for (const RingStep& r : ring_trace().steps()) blocks += (r.computed - r.begin) / steps;
  std::vector<double> mine{waited, step - waited, blocks}, all(3 * world.size());
  world.all_gather(Span<const double>(mine), Span<double>(all));
  if (world.rank() != 0) return;
  double hi[2] = {0, 0}, lo[2] = {1e300, 1e300};
  std::printf("%-22s", name);
  for (int r = 0; r < world.size(); ++r) {
    const double* x = &all[3 * std::size_t(r)];
    std::printf(" %7.1f %7.1f %7.1f", 1e3 * x[0], 1e3 * x[1], 1e3 * x[2]);
    for (int k = 0; k < 2; ++k) {
      hi[k] = std::max(hi[k], x[k + 1]);
      lo[k] = std::min(lo[k], x[k + 1]);
    }
  }
  std::printf(" %10.2f %10.2f\n", hi[0] / lo[0], hi[1] / lo[1]);
  std::fflush(stdout);
}

// Two steps of f's trainer, the second's seconds (the slowest rank's).
double second_step(const Comm& world, BenchTrainer& t) {
  (void)t.step();
  return slowest(world, t.step().seconds);
}

void training_rows(const Comm& world, double seconds, const gpt2::Options& one,
                   const std::vector<std::pair<const char*, BenchTrainer*>>& trainers) {
  SingleProcess single(world, one);
  std::vector<Variant> variants = machine_check_variants(world, check_gemm());
  variants.push_back([&] {
    return single.run(world, [](BenchTrainer& t) {
      (void)t.step();
      return t.step().seconds;
    });
  });
  for (const auto& [name, t] : trainers)
    variants.push_back([&, t = t] { return second_step(world, *t); });
  const Timings t = interleaved(world, seconds, variants);
  if (world.rank() != 0) return;
  const double tokens = double(one.batch) * one.model.seq;
  std::printf(
      "# %s; machine check, interleaved: a GEMM on both ranks at once takes %.2f x its "
      "time on one rank alone (1.00: a core per rank)\n",
      load_average().c_str(), t.ratio(1, 0));
  std::printf("%-22s %9s %9s %8s\n", "training (same batch)", "step_ms", "tokens/s", "speedup");
  std::printf("%-22s %9.1f %9.0f %8.2f\n", "single process", t.median(2) * 1e3,
              tokens / t.median(2), 1.0);
  for (std::size_t k = 3; k < variants.size(); ++k)
    std::printf("%-22s %9.1f %9.0f %8.2f\n", trainers[k - 3].first, t.median(k) * 1e3,
                tokens / t.median(k), t.ratio(2, k));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    int seq = 2048;
    double train_seconds = 20;
    cli::App app{"CP=2 (zigzag, contiguous) training next to one process and TP=2."};
    app.add_option("--seq", seq, "tokens per sequence (a multiple of 4)")->capture_default_str();
    app.add_option("--train-seconds", train_seconds, "time for the training rows")
        ->capture_default_str();
    parse_command_line(app, argc, argv, world);
    const int n = world.size();
    require(n == 2 || n == 4,
            "bench_cp runs on 2 ranks (CP=2, training and balance) or 4 (CP=4, "
            "balance): mpiexec -n 2 ./bench_cp");
    configure_threads(world, 1);

    const gpt2::Options one = long_options(seq, {1, 1, 1});
    const TokenSource data = TokenSource::synthetic(one.model.vocab);
    BenchTrainer zigzag(world, long_options(seq, {1, 1, 1, n}), data),
        contiguous(world, long_options(seq, {1, 1, 1, n}, CpSplit::contiguous), data);
    if (world.rank() == 0)
      std::printf(
          "# bench_cp: %d ranks on %d cores, 1 thread each; GPT-2 V=4096 T=%d L=2 C=128 H=4, "
          "batch 2, float\n",
          n, cores_available(), seq);
    if (n == 2) {
      BenchTrainer tp(world, long_options(seq, {2, 1, 1}), data);
      training_rows(world, train_seconds, one,
                    {{"CP=2 zigzag", &zigzag}, {"CP=2 contiguous", &contiguous}, {"TP=2", &tp}});
    }
    if (world.rank() == 0) {
      std::printf("\n%-22s", "per step, ms");
      for (int r = 0; r < n; ++r) std::printf("  r%d wait    busy   attn", r);
      std::printf(" %10s %10s\n", "busy max/min", "attn max/min");
    }
    const std::string size = "CP=" + std::to_string(n);
    balance_row(world, (size + " zigzag").c_str(), zigzag, 3);
    balance_row(world, (size + " contiguous").c_str(), contiguous, 3);
    return 0;
  });
}
