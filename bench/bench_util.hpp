// bench/bench_util.hpp: what the model, tp, pp and zero benchmarks share — the bench model, the
// FLOPs of a training step and plain GEMMs (Eigen's and the linked BLAS's) as the baseline
// (plain_gemms.hpp), and interleaved median timing.
//
// Absolute times on a shared 2-core machine are noise; ratios measured in one run hold. So every
// benchmark runs its variants interleaved — repetition i runs each variant once, the order
// rotating with i — and reports medians side by side, and ratios as the median of the
// per-repetition ratios.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <trident/core/median.hpp>
#include <trident/models/gpt2/gpt2.hpp>
#include <trident/plan/compute.hpp>
#include "plain_gemms.hpp"

namespace bench {

using namespace trident;

// The benchmarks' trainer; its construction and step are compiled once for every program
// (TRIDENT_PREBUILT_INSTANCES, models/gpt2/trainer.hpp).
using BenchTrainer = gpt2::Trainer<float>;

// The bench model: V=4096, T=128, L=4, C=256, 8 heads; a global batch of 8 sequences.
inline gpt2::Config bench_model() {
  return {4096, 128, 4, 256, 8, 1234};
}
inline constexpr int kBatch = 8;

inline gpt2::Options bench_options(MeshShape mesh = {1, 1, 1}, int microbatches = 1) {
  gpt2::Options o;
  o.model = bench_model();
  o.batch = kBatch;
  o.mesh = mesh;
  o.microbatches = microbatches;
  o.optimizer.lr = 1e-3;
  o.optimizer.steps = 1000;
  return o;
}

inline std::vector<float> random_vector(std::size_t n, float scale) {
  std::vector<float> v(n);
  VecMap<float>(v.data(), n) = Vector<float>::Random(n) * scale;
  return v;
}

// A linear layer's operands, (N, in) -> (N, out), random, with room for the gradients.
struct LinearData {
  std::vector<float> x, w, b, y, dx, dw, db;
  LinearData(int N, int in, int out)
      : x(random_vector(std::size_t(N) * in, 1)),
        w(random_vector(std::size_t(in) * out, 0.02f)),
        b(random_vector(out, 0.02f)),
        y(random_vector(std::size_t(N) * out, 1)),
        dx(x.size()),
        dw(w.size()),
        db(b.size()) {}
};

using trident::median;  // core/median.hpp

// A variant measures itself once and returns its seconds (so that an MPI variant can take the
// slowest rank's time, or a trainer its step time).
using Variant = std::function<double()>;

// Which clock a variant reads: wall time, or this process's CPU time (all its threads), which
// other jobs on a shared machine disturb much less; the same for a one-thread process that
// never waits.
enum class Clock { wall, cpu };
inline double seconds_now(Clock clock) {
  if (clock == Clock::wall) return detail::now_seconds();
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// Seconds of f() on this rank.
inline Variant timed(std::function<void()> f, Clock clock = Clock::wall) {
  return [f, clock] {
    const double t0 = seconds_now(clock);
    f();
    return seconds_now(clock) - t0;
  };
}

// The seconds of each variant in each repetition.
struct Timings {
  std::vector<std::vector<double>> seconds;  // [variant][repetition]

  double median(std::size_t k) const { return bench::median(seconds[k]); }
  // Median over repetitions of seconds[a] / seconds[b]: each ratio pairs runs close in time,
  // so a burst of load on the machine moves both.
  double ratio(std::size_t a, std::size_t b) const {
    std::vector<double> r;
    for (std::size_t i = 0; i < seconds[a].size(); ++i) r.push_back(seconds[a][i] / seconds[b][i]);
    return bench::median(r);
  }
  // Per repetition, the seconds of the fastest of variants [first, end) (e.g. plain engines).
  std::vector<double> fastest(std::size_t first, std::size_t end) const {
    std::vector<double> best = seconds[first];
    for (std::size_t j = first; j < end; ++j)
      for (std::size_t i = 0; i < best.size(); ++i) best[i] = std::min(best[i], seconds[j][i]);
    return best;
  }
  // Median over repetitions of that fastest / seconds[a].
  double ratio_to_fastest(std::size_t a, std::size_t first, std::size_t end) const {
    std::vector<double> r = fastest(first, end);
    for (std::size_t i = 0; i < r.size(); ++i) r[i] /= seconds[a][i];
    return bench::median(r);
  }
};

// Runs the variants in interleaved repetitions, after one warm-up round: repetition i runs each
// once, starting from variant i mod n. As many repetitions as fill about `seconds` (at least
// 5). Collective over `comm` (the ranks agree on the count).
inline Timings interleaved(const Comm& comm, double seconds, const std::vector<Variant>& variants) {
  const std::size_t n = variants.size();
  double warm = 0;
  for (const Variant& v : variants) warm += v();  // warm-up: caches, allocator, page faults
  warm = comm.all_reduce_value(warm, ReduceOp::max);
  const int reps = std::clamp(static_cast<int>(seconds / std::max(warm, 1e-9)), 5, 1000);
  Timings t{std::vector<std::vector<double>>(n, std::vector<double>(reps))};
  for (int i = 0; i < reps; ++i)
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t which = (k + i) % n;
      t.seconds[which][i] = variants[which]();
    }
  return t;
}

// "load 1.23": the machine's 1-minute load average, printed with every table — on a shared
// machine, a load above the cores means other jobs took CPU time during the run.
inline std::string load_average() {
  double load[1] = {0};
  if (getloadavg(load, 1) != 1) return "load ?";
  char text[32];
  std::snprintf(text, sizeof text, "load %.2f", load[0]);
  return text;
}

// The slowest rank's value (all ranks get it). Collective over `comm`.
inline double slowest(const Comm& comm, double seconds) {
  return comm.all_reduce_value(seconds, ReduceOp::max);
}

// f() on world rank 0 alone (a value >= 0), returned on every rank. The other ranks wait
// asleep, so that they leave the cores to rank 0 even when ranks outnumber cores. Collective.
template <class F>
double on_rank_zero(const Comm& world, F&& f) {
  const double value = world.rank() == 0 ? f() : 0.0;
  Request done = world.ibarrier();
  while (!done.test()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  return slowest(world, value);
}

// The machine check as variants: a GEMM on rank 0 alone, and the same on every rank at once.
// Their ratio says how many cores the ranks really had (1.00: one each; 2.00: they shared one).
inline std::vector<Variant> machine_check_variants(const Comm& world,
                                                   std::shared_ptr<PlainGemms> gemm) {
  return {[&world, gemm] { return on_rank_zero(world, timed([gemm] { gemm->run(); })); },
          [&world, gemm] {
            world.barrier();
            return slowest(world, timed([gemm] { gemm->run(); })());
          }};
}
inline std::shared_ptr<PlainGemms> check_gemm() {
  return std::make_shared<PlainGemms>(
      std::vector<Gemm>{{"check", 1024, 1024, 256, false, false, 8}});
}
// The machine check on its own, for about `seconds`. Collective.
inline double machine_check(const Comm& world, double seconds) {
  return interleaved(world, seconds, machine_check_variants(world, check_gemm())).ratio(1, 0);
}

// The single-process baseline of a parallel benchmark: a trainer on a 1-rank communicator of
// world rank 0.
struct SingleProcess {
  Comm comm;
  std::unique_ptr<BenchTrainer> trainer;

  SingleProcess(const Comm& world, const gpt2::Options& o)
      : comm(world.split(world.rank() == 0 ? 0 : Comm::kUndefined, 0, "single")) {
    if (comm.valid())
      trainer = std::make_unique<BenchTrainer>(comm, o, TokenSource::synthetic(o.model.vocab));
  }
  // f(trainer) on rank 0, on every rank (on_rank_zero). Collective.
  template <class F>
  double run(const Comm& world, F&& f) {
    return on_rank_zero(world, [&] { return f(*trainer); });
  }
  // One training step's seconds.
  double step(const Comm& world) {
    return run(world, [](BenchTrainer& t) { return t.step().seconds; });
  }
};

// One step of a trainer over all of `world`: the slowest rank's seconds. Collective.
inline double step_seconds(const Comm& world, BenchTrainer& t) {
  return slowest(world, t.step().seconds);
}

// Tokens/s of the single process and of each parallel trainer, interleaved step by step, as a
// table: one row per trainer, its speedup over the single process, and its step time over the
// first parallel trainer's. Collective.
// Returns (on rank 0; empty elsewhere) each trainer's speedup.
inline std::vector<double> training_table(
    const Comm& world, double seconds, const gpt2::Options& single_options,
    const std::vector<std::pair<std::string, BenchTrainer*>>& trainers) {
  SingleProcess single(world, single_options);
  std::vector<Variant> variants = machine_check_variants(world, check_gemm());
  variants.push_back([&] { return single.step(world); });
  for (const auto& [name, t] : trainers)
    variants.push_back([&, t = t] { return step_seconds(world, *t); });
  const Timings t = interleaved(world, seconds, variants);
  const double tokens = double(single_options.batch) * single_options.model.seq;
  if (world.rank() != 0) return {};
  std::printf(
      "# speedup and step/row2: medians of the per-repetition ratios; %s\n"
      "# machine check, interleaved: the same GEMM on all %d ranks at once takes %.2f x "
      "its time on one rank alone (1.00: every rank had a core to itself)\n",
      load_average().c_str(), world.size(), t.ratio(1, 0));
  std::printf("%-26s %9s %9s %8s %10s\n", "training (same batch)", "step_ms", "tokens/s", "speedup",
              "step/row2");
  std::printf("%-26s %9.1f %9.0f %8.2f\n", "single process", t.median(2) * 1e3,
              tokens / t.median(2), 1.0);
  std::vector<double> speedups;
  for (std::size_t k = 3; k < variants.size(); ++k) {
    speedups.push_back(t.ratio(2, k));
    std::printf("%-26s %9.1f %9.0f %8.2f %10.2f\n", trainers[k - 3].first.c_str(),
                t.median(k) * 1e3, tokens / t.median(k), t.ratio(2, k), t.ratio(k, 3));
  }
  std::fflush(stdout);
  return speedups;
}

}  // namespace bench
