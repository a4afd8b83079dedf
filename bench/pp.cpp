// bench/pp: the pipeline bubble measured from a training step's spans next to GPipe's
// (p-1)/(m+p-1), and pipelined training next to the single process, in one run.
//
//   mpiexec -n 2 ./bench_pp        mpiexec -n 4 ./bench_pp       [--steps 5] [--train-seconds 20]
//                                                                 [--zero-bubble-only]
//
// Bubble (Huang et al. 2019; the same for 1F1B, Narayanan et al. 2021 §2.2), the median over
// --steps steps, m = 1 ... 16 microbatches of a global batch of 16 sequences:
//  - spans: as train/report.hpp, from the step's spans (StepResult::intervals),
//      1 - sum over ranks of forward + backward wall time / (p x makespan);
//  - work: 1 - W / (c x makespan), W the forward + backward time of the same step (m
//    microbatches) in one process alone, c = min(p, cores). Its formula is
//      1 - min(1, p m / (c (m + p - 1))),
//    which is (p-1)/(m+p-1) when every rank has a core. With more ranks than cores the spans
//    of ranks that share a core stretch, so only this measure says how busy the cores were.
// Models: the bench model with a byte vocabulary (V=256: a cheap LM head, balanced stages, as
// the formula assumes), and the bench model itself (V=4096: the last stage also runs an LM head
// worth ~1.2 blocks). "check": the same GEMM on all ranks at once over its time on rank 0
// alone, right after the row (1.00: a core per rank; p / cores when ranks share the cores).
// The bubble table splits the layers evenly, as the formula assumes equal stages.
//
// ZB-H1 (Qi et al. 2023) and ZB-V (Qi et al. 2024; 2p chunks in a V, pp/schedule_zbv.hpp) next
// to 1F1B, the bench model with V = 256 (equal stages: the bubble is the schedule's) and V = 4096
// (the head's stage lighter, even with the layers split by the cost model: idle time no schedule
// removes; ZB-V's 2p = 4 chunks of the 4 layers get 1 layer each, so its rank 0 carries the
// embedding and the head), --pp-layers auto, global batch 16, m = 4, 8, 16: the three
// trainers' steps interleaved; for each, the median spans bubble, the part of it that the
// stages' unequal busy times leave whatever the schedule ("imbal.": sum over ranks of the
// busiest rank's compute time - the rank's, over p x makespan), and each stage's peak of
// activation memory (MemoryKind:: activations, the most held at once during the measured steps).
// The formula columns: 1F1B's (p-1)/(m+p-1), ZB-H1's (p-1)/(3m+p-1) and ZB-V's simulated
// idle/(3m+idle), idle = max((p-1)/2, 2p-1-m) (plan::zbv_bubble_share), all for equal stages
// (and, zero-bubble, F = B = W). ZB-V's activation peak is to stay within 1F1B's stage 0's. ZB-H1's
// activation bound per stage s ("bound"): 1F1B's measured peak, plus the s microbatches whose W is
// still deferred (Qi et al. 2023 §3.1: stage s runs W of microbatch k after B of k + s), each
// holding only what W reads (w_stash_bytes), plus one block's output gradients while B allocates
// them (9 N C).
//
// Training rows: the bench model, global batch 8, m = 8: layers even, auto (each rank's cost
// balanced, pp/balance.hpp) with 1F1B, ZB-H1 and ZB-V, each next to the single process in the
// same run (goal: 1.65x at PP=2).
#include <CLI/CLI.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/plan/formulas.hpp>
#include <trident/trident.hpp>

#include "bench_util.hpp"

using namespace trident;
using namespace bench;

namespace {

double compute_seconds(const std::vector<pp::Interval>& intervals) {
  double c = 0;
  for (const pp::Interval& s : intervals)
    if (pp::is_compute(s.kind)) c += s.end - s.begin;
  return c;
}

struct Bubble {
  double spans = 0, work = 0;  // work: or, in the ZB-H1 table, the imbalance's part of spans
};

// Median bubbles of `steps` steps (after a warm-up step) of a pipeline over the world.
Bubble measure_bubble(const Comm& world, const gpt2::Options& o, int steps, int cores) {
  gpt2::Options alone = o;
  alone.mesh = {1, 1, 1};
  alone.pp_layers.clear();
  SingleProcess single(world, alone);
  BenchTrainer t(world, o, TokenSource::synthetic(o.model.vocab));
  (void)t.step();
  single.step(world);
  std::vector<double> spans, work;
  for (int s = 0; s < steps; ++s) {
    const StepResult r = t.step();
    double end = 0;
    for (const pp::Interval& sp : r.intervals) end = std::max(end, sp.end);
    const double compute = world.all_reduce_value(compute_seconds(r.intervals));
    const double makespan = slowest(world, end);
    const double w =
        single.run(world, [](BenchTrainer& st) { return compute_seconds(st.step().intervals); });
    spans.push_back(1 - compute / (world.size() * makespan));
    work.push_back(1 - w / (std::min(world.size(), cores) * makespan));
  }
  return {median(spans), median(work)};
}

// Where one rank's step went, in ms (medians over steps): its F, B (fused backward for 1F1B)
// and W passes, the time it waited in receives, and the rest of the makespan (sends, gaps).
struct StageTimes {
  double f = 0, b = 0, w = 0, recv = 0, other = 0;
};
StageTimes stage_times(const std::vector<pp::Interval>& intervals, double makespan) {
  StageTimes t;
  for (const pp::Interval& s : intervals) {
    const double d = (s.end - s.begin) * 1e3;
    if (s.kind == pp::IntervalKind::forward) t.f += d;
    if (s.kind == pp::IntervalKind::backward) t.b += d;
    if (s.kind == pp::IntervalKind::weight) t.w += d;
    if (s.kind == pp::IntervalKind::recv) t.recv += d;
  }
  t.other = makespan * 1e3 - t.f - t.b - t.w - t.recv;
  return t;
}

// One step of t (collective): the spans bubble, and the part of it that the stages' unequal
// busy times alone leave, whatever the schedule: sum over ranks of (slowest rank's busy time -
// the rank's) / (p x makespan).
Bubble step_bubble(const Comm& world, BenchTrainer& t, StageTimes* times = nullptr) {
  const StepResult r = t.step();
  double end = 0;
  for (const pp::Interval& sp : r.intervals) end = std::max(end, sp.end);
  const double busy = compute_seconds(r.intervals), makespan = slowest(world, end);
  if (times) *times = stage_times(r.intervals, makespan);
  const double compute = world.all_reduce_value(busy);
  const double most = world.all_reduce_value(busy, ReduceOp::max);
  const int p = world.size();
  return {1 - compute / (p * makespan), (p * most - compute) / (p * makespan)};
}

// Bytes a GPT-2 stage (no TP) keeps per microbatch from B to W (the zero-bubble split: B takes
// the LayerNorms' gradients, W the linear layers'), N rows of the microbatch, C hidden, V vocab:
// per block the four linear layers' inputs (ln1, att, ln2: N C each; act: 4 N C) and output
// gradients (dout, dx2: N C each; d_qkv: 3 N C; d_fc: 4 N C), 16 N C; the last stage also the
// LM head's dlogits (N V), its input (N C) and the head's input (N C); the first stage the
// embedding's output gradient (N C).
double w_stash_bytes(const gpt2::Options& o, int layers, bool first, bool last) {
  const double N = double(o.rows_per_microbatch()) * o.model.seq, C = o.model.hidden;
  const double elements =
      layers * 16 * N * C + (last ? N * o.model.vocab + 2 * N * C : 0) + (first ? N * C : 0);
  return elements * sizeof(float);
}

// The zero-bubble table's header.
void print_zero_bubble_header(int p, int steps) {
  std::printf(
      "\n# ZB-H1 and ZB-V next to 1F1B: bench model, global batch 16, layers auto (ZB-V: %d "
      "chunks); median of %d steps each, interleaved; %s\n",
      2 * p, steps, load_average().c_str());
  std::printf("%5s %4s %11s | %-24s | %-24s | %-24s | %-13s | %s\n", "", "", "", "1F1B bubble",
              "ZB-H1 bubble", "ZB-V bubble", "/ 1F1B spans",
              "activation peak MiB per stage, 1F1B / ZB-H1 (ZB-H1's bound) / ZB-V");
  std::printf("%5s %4s %11s |", "V", "m", "layers,zbv");
  for (int k = 0; k < 3; ++k) std::printf(" %9s %6s %7s |", "spans", "imbal.", "formula");
  std::printf(" %6s %6s |", "ZB-H1", "ZB-V");
  for (int r = 0; r < p; ++r) std::printf(" %23s", ("stage " + std::to_string(r)).c_str());
  std::printf("\n");
}

// The three schedules of the zero-bubble table.
constexpr pp::ScheduleKind kZeroBubbleKinds[3] = {pp::ScheduleKind::one_f_one_b,
                                                  pp::ScheduleKind::zb_h1, pp::ScheduleKind::zbv};

// Each schedule's median spans bubble and imbalance over `steps` steps, the trainers' steps
// interleaved, and this rank's activation peak under each.
struct ZeroBubbleRun {
  double bubble[3], imbalance[3], peak[3];
  StageTimes times[3];  // this rank's, medians
};
ZeroBubbleRun run_zero_bubble(const Comm& world, int vocab, int m, int steps) {
  std::vector<std::unique_ptr<BenchTrainer>> t;
  for (pp::ScheduleKind kind : kZeroBubbleKinds) {
    gpt2::Options o = bench_options({1, world.size(), 1}, m);
    o.batch = 16;
    o.model.vocab = vocab;
    o.schedule = kind;
    o.virtual_stages = kind == pp::ScheduleKind::zbv ? 2 : 1;
    t.push_back(std::make_unique<BenchTrainer>(world, o, TokenSource::synthetic(o.model.vocab)));
  }
  std::vector<double> bubble[3], imbalance[3];
  std::vector<StageTimes> times[3];
  ZeroBubbleRun run{};
  for (auto& x : t) (void)x->step();  // warm-up
  for (int s = 0; s < steps; ++s)
    for (int k = 0; k < 3; ++k) {
      const int which = (k + s) % 3;
      memory_stats().reset_peaks();
      StageTimes st;
      const Bubble b = step_bubble(world, *t[which], &st);
      bubble[which].push_back(b.spans), imbalance[which].push_back(b.work);
      times[which].push_back(st);
      run.peak[which] =
          std::max(run.peak[which], double(memory_stats().peak(MemoryKind::activations)));
    }
  for (int k = 0; k < 3; ++k) {
    run.bubble[k] = median(bubble[k]), run.imbalance[k] = median(imbalance[k]);
    auto med = [&](double StageTimes::*x) {
      std::vector<double> v;
      for (const StageTimes& st : times[k]) v.push_back(st.*x);
      return median(v);
    };
    StageTimes& rt = run.times[k];
    rt.f = med(&StageTimes::f), rt.b = med(&StageTimes::b), rt.w = med(&StageTimes::w);
    rt.recv = med(&StageTimes::recv), rt.other = med(&StageTimes::other);
  }
  return run;
}

// ZB-H1 and ZB-V next to 1F1B: median spans bubble of `steps` steps each, and each stage's
// activation peak in MiB (rank = stage), with ZB-H1's bound.
// Appends to `where` each rank's StageTimes under each schedule.
void zero_bubble_row(const Comm& world, int vocab, int m, int steps, std::string& where) {
  const int p = world.size();
  const ZeroBubbleRun run = run_zero_bubble(world, vocab, m, steps);
  std::vector<double> peaks(3 * p), times(15 * p);
  world.all_gather(Span<const double>(run.peak, 3), Span<double>(peaks));
  world.all_gather(Span<const double>(&run.times[0].f, 15), Span<double>(times));
  if (world.rank() != 0) return;
  const char* names[3] = {"1f1b", "zb-h1", "zbv"};
  for (int k = 0; k < 3; ++k)
    for (int r = 0; r < p; ++r) {
      const double* t = &times[15 * r + 5 * k];
      char line[200];
      std::snprintf(line, sizeof line,
                    "%5d %4d %6s %4d | %7.1f %7.1f %7.1f %7.1f %7.1f | %6.2f %6.2f %6.2f\n", vocab,
                    m, names[k], r, t[0], t[1], t[2], t[3], t[4], t[0] / m, t[1] / m, t[2] / m);
      where += line;
    }
  const double MiB = 1024.0 * 1024.0;
  gpt2::Options o = bench_options({1, p, 1}, m);
  o.batch = 16;
  o.model.vocab = vocab;
  const std::vector<int> split = layer_split(o);
  std::string layers;
  for (int n : split) layers += (layers.empty() ? "" : "+") + std::to_string(n);
  gpt2::Options v = o;
  v.schedule = pp::ScheduleKind::zbv, v.virtual_stages = 2;
  std::string chunks;  // ZB-V's, per virtual stage
  for (int n : layer_split(v)) chunks += (chunks.empty() ? "" : ",") + std::to_string(n);
  layers += " " + chunks;
  const double formula[3] = {plan::bubble_share(p, m), plan::zb_h1_bubble_share(p, m),
                             plan::zbv_bubble_share(p, m)};
  std::printf("%5d %4d %11s |", vocab, m, layers.c_str());
  for (int k = 0; k < 3; ++k)
    std::printf(" %9.3f %6.3f %7.3f |", run.bubble[k], run.imbalance[k], formula[k]);
  std::printf(" %6.2f %6.2f |", run.bubble[1] / run.bubble[0], run.bubble[2] / run.bubble[0]);
  const double N = double(o.rows_per_microbatch()) * o.model.seq, C = o.model.hidden;
  for (int r = 0; r < p; ++r) {
    const double* at = &peaks[3 * r];
    const double bound = at[0] + r * w_stash_bytes(o, split[r], r == 0, r == p - 1) +
                         (split[r] > 0 ? 9 * N * C * sizeof(float) : 0);
    std::printf(" %5.1f/%5.1f (%4.1f)/%5.1f", at[0] / MiB, at[1] / MiB, bound / MiB, at[2] / MiB);
  }
  std::printf("\n");
  std::fflush(stdout);
}

// The bubble table: GPipe's formula next to the measured spans and work bubbles, m = 1 ... 16,
// layers split evenly (V = 256 and V = 4096).
void bubble_table(const Comm& world, const std::string& schedule, int steps, int cores) {
  const int p = world.size(), c = std::min(p, cores);
  if (world.rank() == 0) {
    std::printf(
        "# bench_pp: PP=%d (%s), 1 thread per rank, %d cores; bench model L=4 C=256 H=8 "
        "T=128, global batch 16; median of %d steps; %s\n",
        p, schedule.c_str(), cores, steps, load_average().c_str());
    std::printf("%4s %9s | %-39s | %-19s\n", "", "", "V=256 (balanced stages)", "V=4096");
    std::printf("%4s %9s | %9s %9s %9s %9s | %9s %9s | %6s\n", "m", "formula", "spans", "-formula",
                "work", "(formula)", "spans", "-formula", "check");
  }
  for (int m : steps > 0 ? std::vector<int>{1, 2, 4, 8, 16} : std::vector<int>{}) {
    const double formula = plan::bubble_share(p, m);
    const double work_formula = 1 - std::min(1.0, double(p) * m / (c * (m + p - 1.0)));
    Bubble b[2];
    for (int k = 0; k < 2; ++k) {
      gpt2::Options o = bench_options({1, p, 1}, m);
      o.batch = 16;
      o.schedule = pp::parse_schedule(schedule);
      o.pp_layers.assign(p, o.model.layers / p);  // equal layers, as the formula assumes
      if (k == 0) o.model.vocab = 256;
      b[k] = measure_bubble(world, o, k == 0 ? steps : std::max(1, steps / 2), cores);
    }
    const double check = machine_check(world, 0.5);
    if (world.rank() == 0)
      std::printf("%4d %9.3f | %9.3f %+9.3f %9.3f %9.3f | %9.3f %+9.3f | %6.2f\n", m, formula,
                  b[0].spans, b[0].spans - formula, b[0].work, work_formula, b[1].spans,
                  b[1].spans - formula, check);
    std::fflush(stdout);
  }
}

// ZB-H1 and ZB-V next to 1F1B, m = 4, 8, 16, V = 256 and 4096.
void zero_bubble_table(const Comm& world, int steps) {
  if (world.rank() == 0) print_zero_bubble_header(world.size(), steps);
  std::string where;
  for (int vocab : {256, 4096})
    for (int m : steps > 0 ? std::vector<int>{4, 8, 16} : std::vector<int>{})
      zero_bubble_row(world, vocab, m, steps, where);
  if (world.rank() != 0 || where.empty()) return;
  std::printf(
      "\n# where each rank's step went, ms per step (medians; zbv: both chunks): F, B (1f1b: the "
      "fused backward), W, waiting in receives, the rest (sends, gaps); and per pass\n");
  std::printf("%5s %4s %6s %4s | %7s %7s %7s %7s %7s | %6s %6s %6s\n", "V", "m", "sched", "rank",
              "F", "B", "W", "recv", "other", "F/mb", "B/mb", "W/mb");
  std::printf("%s", where.c_str());
  std::fflush(stdout);
}

// Throughput on the bench model (global batch 8), m = 8, next to the single process; for p = 2
// also layers auto with 1F1B and ZB-H1, and V = 256.
void training_rows(const Comm& world, const std::string& schedule, double train_seconds) {
  const int p = world.size();
  gpt2::Options even = bench_options({1, p, 1}, 8);
  even.schedule = pp::parse_schedule(schedule);
  even.pp_layers.assign(p, even.model.layers / p);  // 2+2 or 1+1+1+1
  BenchTrainer t_even(world, even, TokenSource::synthetic(even.model.vocab));
  if (world.rank() == 0) std::printf("\n");
  if (p != 2) {
    training_table(world, train_seconds, bench_options(), {{"PP=4, m=8, layers 1+1+1+1", &t_even}});
    return;
  }
  gpt2::Options balanced = even;  // auto: the LM head weighs ~1.2 blocks, 3 + 1
  balanced.pp_layers.clear();
  balanced.schedule = pp::ScheduleKind::one_f_one_b;
  gpt2::Options zb = balanced, zbv = balanced;
  zb.schedule = pp::ScheduleKind::zb_h1;
  zbv.schedule = pp::ScheduleKind::zbv, zbv.virtual_stages = 2;  // auto: 1,1,2,0 (pp/balance.hpp)
  BenchTrainer t_balanced(world, balanced, TokenSource::synthetic(even.model.vocab));
  BenchTrainer t_zb(world, zb, TokenSource::synthetic(even.model.vocab));
  BenchTrainer t_zbv(world, zbv, TokenSource::synthetic(even.model.vocab));
  auto named = [](const char* schedule, const gpt2::Options& o) {
    std::string layers;
    for (int n : layer_split(o)) layers += (layers.empty() ? "" : ",") + std::to_string(n);
    return std::string("PP=2, m=8, ") + schedule + " " + layers;
  };
  training_table(world, train_seconds, bench_options(),
                 {{"PP=2, m=8, 1f1b 2,2", &t_even},
                  {named("1f1b", balanced), &t_balanced},
                  {named("zb-h1", zb), &t_zb},
                  {named("zbv", zbv), &t_zbv}});
  // The byte vocabulary: the LM head is cheap, so 2 + 2 layers are equal stages.
  gpt2::Options bytes = even, single = bench_options();
  bytes.model.vocab = single.model.vocab = 256;
  BenchTrainer t_bytes(world, bytes, TokenSource::synthetic(bytes.model.vocab));
  if (world.rank() == 0) std::printf("\n# the same with V=256 (equal stages)\n");
  training_table(world, train_seconds, single, {{"PP=2, m=8, V=256, 2+2", &t_bytes}});
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    int steps = 5;
    double train_seconds = 20;
    std::string schedule = "1f1b";
    bool zero_bubble_only = false;
    CLI::App app{
        "Pipeline bubble next to (p-1)/(m+p-1), and pipelined training next to one process."};
    app.add_option("--steps", steps, "measured steps per configuration (0: no bubble tables)")
        ->capture_default_str();
    app.add_option("--schedule", schedule, "pipeline schedule of the bubble table")
        ->check(CLI::IsMember({"gpipe", "1f1b"}))
        ->capture_default_str();
    app.add_option("--train-seconds", train_seconds, "time for the training rows (0: none)")
        ->capture_default_str();
    app.add_flag("--zero-bubble-only", zero_bubble_only,
                 "skip the bubble table: ZB-H1 and ZB-V next to 1F1B, then the training rows");
    parse_command_line(app, argc, argv, world);
    const int p = world.size(),
              cores = node_comm(world).all_reduce_value(cores_available(), ReduceOp::max);
    require(p == 2 || p == 4, "bench_pp runs on 2 or 4 ranks (PP = ranks)");
    configure_threads(world, 1);
    if (!zero_bubble_only) bubble_table(world, schedule, steps, cores);
    zero_bubble_table(world, steps);
    if (train_seconds > 0) training_rows(world, schedule, train_seconds);
    return 0;
  });
}
