// bench/pp_zero_bubble.hpp: bench_pp's zero-bubble table (pp.cpp): ZB-H1 and ZB-V next to 1F1B,
// and where each rank's step went.
//
// ZB-H1 (Qi et al. 2023) and ZB-V (Qi et al. 2024; 2p chunks in a V, pp/schedule_zbv.hpp) next
// to 1F1B, the bench model with V = 256 (equal stages: the bubble is the schedule's) and V = 4096
// (the ranks unequal even with the layers split by the cost model, idle time no schedule
// removes: 1F1B and ZB-H1 3+1; ZB-V's V puts the embedding and the head on rank 0, and auto,
// which balances each rank's sum of chunks, gives its 4 virtual stages 1,1,2,0 layers: rank 0
// runs layer 0 and the head alone), --pp-layers auto, global batch 16, m = 4, 8, 16: the three
// trainers' steps interleaved; for each, the median spans bubble, the part of it that the
// stages' unequal busy times leave whatever the schedule ("imbal.": sum over ranks of the
// busiest rank's compute time - the rank's, over p x makespan), and each stage's peak of
// activation memory (MemoryKind:: activations, the most held at once during the measured steps).
// The formula columns: 1F1B's (p-1)/(m+p-1), ZB-H1's (p-1)/(3m+p-1) and ZB-V's simulated
// idle/(3m+idle), idle = max((p-1)/2, 2p-1-m) (pp::zbv_bubble_share), all for equal stages
// (and, zero-bubble, F = B = W). ZB-V's activation peak is to stay within 1F1B's stage 0's. ZB-H1's
// activation bound per stage s ("bound"): 1F1B's measured peak, plus the s microbatches whose W is
// still deferred (Qi et al. 2023 §3.1: stage s runs W of microbatch k after B of k + s), each
// holding only what W reads (w_stash_bytes), plus one block's output gradients while B allocates
// them (9 N C). Then, per rank and schedule, where its step went: F, B (or the fused backward), W,
// the waits in receives and the rest. The goal lines add, for 1F1B and ZB-H1, the least spans
// bubble any schedule could leave with the stages' measured busy times, and both schedules'
// lists replayed with each rank's measured per-pass times, and with equal stages (pp_bounds.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <trident/plan/formulas.hpp>
#include <trident/trident.hpp>

#include "bench_util.hpp"
#include "pp_bounds.hpp"

namespace bench {

inline double compute_seconds(const std::vector<pp::Interval>& intervals) {
  double c = 0;
  for (const pp::Interval& s : intervals)
    if (pp::is_compute(s.kind)) c += s.end - s.begin;
  return c;
}

struct Bubble {
  double spans = 0, work = 0;  // work: or, in the ZB-H1 table, the imbalance's part of spans
  double least = 0;            // the ZB-H1 table: the least spans bubble of any schedule
};

// Where one rank's step went, in ms (medians over steps): its F, B (fused backward for 1F1B)
// and W passes, the time it waited in receives, and the rest of the makespan (sends, gaps).
struct StageTimes {
  double f = 0, b = 0, w = 0, recv = 0, other = 0;
};
inline StageTimes stage_times(const std::vector<pp::Interval>& intervals, double makespan) {
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

// One step of t (collective): the spans bubble; the part of it that the stages' unequal busy
// times alone leave, whatever the schedule: sum over ranks of (slowest rank's busy time - the
// rank's) / (p x makespan); and the spans bubble the least makespan would leave.
inline Bubble step_bubble(const Comm& world, BenchTrainer& t, StageTimes* times = nullptr) {
  const StepResult r = t.step();
  double end = 0, first = 0;
  for (const pp::Interval& sp : r.intervals) {
    end = std::max(end, sp.end);
    if (sp.kind == pp::IntervalKind::forward && sp.microbatch == 0 && sp.chunk == 0)
      first = sp.end - sp.begin;
  }
  const double makespan = slowest(world, end);
  if (times) *times = stage_times(r.intervals, makespan);
  const int p = world.size();
  const double mine[2] = {first, compute_seconds(r.intervals)};
  std::vector<double> all(2 * p);  // every rank's first forward and busy time
  world.all_gather(Span<const double>(mine, 2), Span<double>(all));
  double compute = 0, most = 0;  // the ranks' busy times: summed, the largest
  for (int s = 0; s < p; ++s) {
    compute += all[2 * s + 1];
    most = std::max(most, all[2 * s + 1]);
  }
  return {1 - compute / (p * makespan), (p * most - compute) / (p * makespan),
          1 - compute / (p * least_makespan(all))};
}

// Bytes a GPT-2 stage (no TP) keeps per microbatch from B to W (the zero-bubble split: B takes
// the LayerNorms' gradients, W the linear layers'), N rows of the microbatch, C hidden, V vocab:
// per block the four linear layers' inputs (ln1, att, ln2: N C each; act: 4 N C) and output
// gradients (dout, dx2: N C each; d_qkv: 3 N C; d_fc: 4 N C), 16 N C; the last stage also the
// LM head's dlogits (N V), its input (N C) and the head's input (N C); the first stage the
// embedding's output gradient (N C).
inline double w_stash_bytes(const gpt2::Options& o, int layers, bool first, bool last) {
  const double N = double(o.rows_per_microbatch()) * o.model.seq, C = o.model.hidden;
  const double elements =
      layers * 16 * N * C + (last ? N * o.model.vocab + 2 * N * C : 0) + (first ? N * C : 0);
  return elements * sizeof(float);
}

// The zero-bubble table's header.
inline void print_zero_bubble_header(int p, int steps) {
  std::printf(
      "\n# ZB-H1 and ZB-V next to 1F1B: bench model, global batch 16, layers auto (ZB-V: %d "
      "chunks); median of %d steps each, interleaved; %s\n",
      2 * p, steps, load_average().c_str());
  std::printf("%5s %4s %19s | %-24s | %-24s | %-24s | %-13s | %s\n", "", "", "", "1F1B bubble",
              "ZB-H1 bubble", "ZB-V bubble", "/ 1F1B spans",
              "activation peak MiB per stage, 1F1B / ZB-H1 (ZB-H1's bound) / ZB-V");
  std::printf("%5s %4s %19s |", "V", "m", "layers,zbv");
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
  double bubble[3], imbalance[3], least[3], peak[3];
  StageTimes times[3];  // this rank's, medians
  // rank 0: 1F1B's and ZB-H1's lists replayed with the ranks' measured per-pass times (replay),
  // and with every stage given their mean (equal), spans bubbles; Qi et al.'s ZB-H1 / 1F1B
  // with the mean times
  double replay[2], equal[2], qi_ratio;
};
inline ZeroBubbleRun run_zero_bubble(const Comm& world, int vocab, int m, int steps) {
  std::vector<std::unique_ptr<BenchTrainer>> t;
  for (pp::ScheduleKind kind : kZeroBubbleKinds) {
    gpt2::Options o = bench_options({1, world.size(), 1}, m);
    o.batch = 16;
    o.model.vocab = vocab;
    o.schedule = kind;
    o.virtual_stages = kind == pp::ScheduleKind::zbv ? 2 : 1;
    t.push_back(std::make_unique<BenchTrainer>(world, o, TokenSource::synthetic(o.model.vocab)));
  }
  std::vector<double> bubble[3], imbalance[3], least[3];
  std::vector<StageTimes> times[3];
  ZeroBubbleRun run{};
  for (auto& x : t) (void)x->step();  // warm-up
  for (int s = 0; s < steps; ++s)
    for (int k = 0; k < 3; ++k) {
      const int which = (k + s) % 3;
      memory_stats().reset_peaks();
      StageTimes st;
      const Bubble b = step_bubble(world, *t[which], &st);
      bubble[which].push_back(b.spans);
      imbalance[which].push_back(b.work);
      least[which].push_back(b.least);
      times[which].push_back(st);
      run.peak[which] =
          std::max(run.peak[which], double(memory_stats().peak(MemoryKind::activations)));
    }
  for (int k = 0; k < 3; ++k) {
    run.bubble[k] = median(bubble[k]);
    run.imbalance[k] = median(imbalance[k]);
    run.least[k] = median(least[k]);
    auto med = [&](double StageTimes::*x) {
      std::vector<double> v;
      for (const StageTimes& st : times[k]) v.push_back(st.*x);
      return median(v);
    };
    StageTimes& rt = run.times[k];
    rt.f = med(&StageTimes::f);
    rt.b = med(&StageTimes::b);
    rt.w = med(&StageTimes::w);
    rt.recv = med(&StageTimes::recv);
    rt.other = med(&StageTimes::other);
  }
  return run;
}

// ZB-H1 and ZB-V next to 1F1B: median spans bubble of `steps` steps each, and each stage's
// activation peak in MiB (rank = stage), with ZB-H1's bound.
// Appends to `where` each rank's StageTimes under each schedule. Returns the run.
inline ZeroBubbleRun zero_bubble_row(const Comm& world, int vocab, int m, int steps,
                                     std::string& where) {
  const int p = world.size();
  ZeroBubbleRun run = run_zero_bubble(world, vocab, m, steps);
  std::vector<double> peaks(3 * p), times(15 * p);
  world.all_gather(Span<const double>(run.peak, 3), Span<double>(peaks));
  world.all_gather(Span<const double>(&run.times[0].f, 15), Span<double>(times));
  if (world.rank() != 0) return run;
  replay(times, p, m, false, run.replay);
  replay(times, p, m, true, run.equal);
  run.qi_ratio = qi_ratio(times, p, m);
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
  gpt2::Options v = o;
  v.schedule = pp::ScheduleKind::zbv;
  v.virtual_stages = 2;
  // the split, and ZB-V's per virtual stage
  const std::vector<int> split = layer_split(o);
  const std::string layers =
      pp::half_split_text(split) + " " + pp::half_split_text(layer_split(v), ",");
  const double formula[3] = {pp::bubble_share(p, m), pp::zb_h1_bubble_share(p, m),
                             pp::zbv_bubble_share(p, m)};
  std::printf("%5d %4d %19s |", vocab, m, layers.c_str());
  for (int k = 0; k < 3; ++k)
    std::printf(" %9.3f %6.3f %7.3f |", run.bubble[k], run.imbalance[k], formula[k]);
  std::printf(" %6.2f %6.2f |", run.bubble[1] / run.bubble[0], run.bubble[2] / run.bubble[0]);
  const double N = double(o.rows_per_microbatch()) * o.model.seq, C = o.model.hidden;
  for (int r = 0; r < p; ++r) {
    const double* at = &peaks[3 * r];
    const int layers_here = stage_spec(split, r).layers;  // a split layer counts on both
    const double bound = at[0] + r * w_stash_bytes(o, layers_here, r == 0, r == p - 1) +
                         (layers_here > 0 ? 9 * N * C * sizeof(float) : 0);
    std::printf(" %5.1f/%5.1f (%4.1f)/%5.1f", at[0] / MiB, at[1] / MiB, bound / MiB, at[2] / MiB);
  }
  std::printf("\n");
  std::fflush(stdout);
  return run;
}

// ZB-H1 and ZB-V next to 1F1B, m = 4, 8, 16, V = 256 and 4096.
inline void zero_bubble_table(const Comm& world, int steps) {
  if (world.rank() == 0) print_zero_bubble_header(world.size(), steps);
  std::string where;
  ZeroBubbleRun goal{};
  for (int vocab : {256, 4096})
    for (int m : steps > 0 ? std::vector<int>{4, 8, 16} : std::vector<int>{}) {
      const ZeroBubbleRun run = zero_bubble_row(world, vocab, m, steps, where);
      if (vocab == 256 && m == 8) goal = run;
    }
  if (world.rank() != 0 || where.empty()) return;
  std::printf(
      "# goal (issue 17): ZB-H1's spans bubble over 1F1B's, p=%d, m=8, V=256: %.2f (goal <= "
      "0.50); without the part the stages' unequal busy times leave (spans - imbal.): %.2f\n"
      "# the least spans bubble any schedule leaves with the stages' measured busy times (the "
      "last stage waits for the first microbatch's forwards, then computes): 1F1B %.3f, ZB-H1 "
      "%.3f, beside their measured %.3f, %.3f; the least over 1F1B's measured: %.2f\n",
      world.size(), goal.bubble[1] / goal.bubble[0],
      (goal.bubble[1] - goal.imbalance[1]) / (goal.bubble[0] - goal.imbalance[0]), goal.least[0],
      goal.least[1], goal.bubble[0], goal.bubble[1], goal.least[1] / goal.bubble[0]);
  std::printf(
      "# the two schedules' lists replayed (pp/simulate.hpp, sends free) with each rank's "
      "measured per-pass times below: 1F1B %.3f, ZB-H1 %.3f, ZB-H1 / 1F1B %.2f; with every "
      "stage given the ranks' mean times (equal stages): %.2f, Qi et al.'s formula with them "
      "%.2f\n",
      goal.replay[0], goal.replay[1], goal.replay[1] / goal.replay[0],
      goal.equal[1] / goal.equal[0], goal.qi_ratio);
  std::printf(
      "\n# where each rank's step went, ms per step (medians; zbv: both chunks): F, B (1f1b: the "
      "fused backward), W, waiting in receives, the rest (sends, gaps); and per pass\n");
  std::printf("%5s %4s %6s %4s | %7s %7s %7s %7s %7s | %6s %6s %6s\n", "V", "m", "sched", "rank",
              "F", "B", "W", "recv", "other", "F/mb", "B/mb", "W/mb");
  std::printf("%s", where.c_str());
  std::fflush(stdout);
}

}  // namespace bench
