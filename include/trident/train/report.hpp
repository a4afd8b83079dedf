// trident/train/report.hpp: the run report — per rank, measured memory by kind and traffic per
// axis next to their formulas (formulas.hpp), and the measured pipeline bubble next to
// (p-1)/(m+p-1) (Huang et al. 2019; interleaved: (p-1)/(v m + p-1), Narayanan et al. 2021;
// ZB-H1 with F = B = W: (p-1)/(3m+p-1), Qi et al. 2023), and each pipeline stage's busy time
// next to the model's stage costs (pp/balance.hpp), which chose the layer split unless given.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "formulas.hpp"

namespace trident {

// One rank's figures; the fields are doubles so that all ranks' figures gather in one call.
struct RankFigures {
  double tp = 0, pp = 0, dp = 0, cp = 0;                // mesh coordinates
  double parameters = 0, gradients = 0, optimizer = 0;  // bytes held now
  double activations = 0, buffers = 0;                  // peak bytes during the measured steps
  ModelStates states;                                   // formula
  Traffic traffic, formula;                             // bytes per step
  double compute = 0, end = 0;  // seconds per step in forward/backward; last span's end
  double cp_wait = 0;           // seconds per step waiting for the CP ring (not overlapped)
  double peak_live = 0, cached = 0, peak_rss = 0;  // bytes: all Buffers at once, cache, RSS
  // bytes one whole layer keeps per microbatch: measured (0: no whole layer here), the model's
  // formula (NaN: not declared)
  double layer_activations = 0, layer_formula = 0;
};
static_assert(sizeof(RankFigures) % sizeof(double) == 0);

struct RunReport {
  std::vector<RankFigures> ranks;  // world rank order (world rank 0 only)
  // bubble: idle share of all ranks' step (the spans); busiest_idle: the busiest rank's alone, the
  // fill and drain the schedule leaves on the critical stage (the rest of `bubble` is the other
  // stages' lighter load, which no schedule fills)
  double bubble = 0, bubble_formula = 0, busiest_idle = 0;
};

// CommStats' bytes per step on each axis, over `steps` steps.
inline Traffic measured_traffic(double steps) {
  auto bytes = [&](const char* axis) {
    return double(comm_stats().of(axis).total().bytes) / steps;
  };
  // received bytes are the other side of a send: count what this rank sends
  auto sent = [&](const char* axis) {
    return double(comm_stats().of(axis)[CommOp::send].bytes) / steps;
  };
  // the gradient reduction runs over "dp", or "dp_cp" when CP > 1 (mesh/mesh.hpp)
  return {bytes("tp"), sent("pp"), bytes("dp") + bytes("dp_cp"), bytes("emb"), sent("cp")};
}

// Measures intervals and CommStats over the `measured` steps, from counters reset just before them:
// use ReportWindow (below), which resets them and checks the count. Collective; the report is
// complete on world rank 0.
// A Stage that measures what a layer's forward keeps (model/decoder_stage.hpp).
template <class Stage, class = void>
struct measures_layer_activations : std::false_type {};
template <class Stage>
struct measures_layer_activations<
    Stage, std::void_t<decltype(std::declval<const Stage&>().layer_activation_bytes())>>
    : std::true_type {};

template <class M, class T, class S, class B>
RunReport make_report(Trainer<M, T, S, B>& t, const std::vector<StepResult>& measured) {
  RankFigures f;
  const MeshCoord c = t.mesh().coord();
  f.tp = c.tp, f.pp = c.pp, f.dp = c.dp, f.cp = c.cp;
  const MemoryStats& mem = memory_stats();
  f.parameters = double(mem.current(MemoryKind::parameters));
  f.gradients = double(mem.current(MemoryKind::gradients));
  f.optimizer = double(mem.current(MemoryKind::optimizer));
  f.activations = double(mem.peak(MemoryKind::activations));
  f.buffers = double(mem.peak(MemoryKind::buffers));
  f.peak_live = double(peak_live_buffer_bytes());
  f.cached = double(cached_buffer_bytes());
  f.peak_rss = double(peak_resident_bytes());
  f.states = model_state_formula(t);
  f.formula = traffic_formula(t);
  f.layer_formula = layer_activation_formula(t);
  for (int k = 0; k < t.chunks(); ++k)
    if constexpr (measures_layer_activations<std::decay_t<decltype(t.chunk(k))>>::value)
      f.layer_activations = std::max(f.layer_activations, t.chunk(k).layer_activation_bytes());
  const double n = std::max<std::size_t>(1, measured.size());
  f.traffic = measured_traffic(n);
  f.cp_wait = comm_stats().of("cp").total().seconds / n;
  for (const StepResult& r : measured)
    for (const pp::Interval& s : r.intervals) {
      if (pp::is_compute(s.kind)) f.compute += (s.end - s.begin) / n;
      f.end = std::max(f.end, s.end);
    }
  // the intervals of each step start at the step's barrier; average their length over the steps
  double ends = 0;
  for (const StepResult& r : measured) {
    double e = 0;
    for (const pp::Interval& s : r.intervals) e = std::max(e, s.end);
    ends += e / n;
  }
  f.end = ends;

  RunReport report;
  const Comm& world = t.mesh().world();
  constexpr std::size_t kDoubles = sizeof(RankFigures) / sizeof(double);
  std::vector<double> all(kDoubles * world.size());
  world.all_gather(Span<const double>(reinterpret_cast<const double*>(&f), kDoubles),
                   Span<double>(all));
  report.ranks.resize(world.size());
  std::copy_n(all.data(), all.size(), reinterpret_cast<double*>(report.ranks.data()));
  double compute = 0, makespan = 0, most = 0;
  for (const RankFigures& r : report.ranks)
    compute += r.compute, makespan = std::max(makespan, r.end), most = std::max(most, r.compute);
  // no measured step (a run of one step): no bubble to report
  report.bubble = makespan > 0 ? 1.0 - compute / (report.ranks.size() * makespan) : std::nan("");
  report.busiest_idle = makespan > 0 ? 1.0 - most / makespan : std::nan("");
  const TrainOptions& o = t.options();
  // GPipe, 1F1B and interleaved 1F1B: (p-1)/(v m + p-1); ZB-H1 with F = B = W: (p-1)/(3m + p-1);
  // ZB-V with F = B = W: idle / (3m + idle), idle = max((p-1)/2, 2p-1-m)
  report.bubble_formula = o.schedule == pp::ScheduleKind::zb_h1
                              ? plan::zb_h1_bubble_share(o.mesh.pp, o.microbatches)
                          : o.schedule == pp::ScheduleKind::zbv
                              ? plan::zbv_bubble_share(o.mesh.pp, o.microbatches)
                              : plan::bubble_share(o.mesh.pp, o.microbatches, o.virtual_stages);
  return report;
}

// Each stage's measured busy time (forward, backward; the mean over its TP and DP ranks) next
// to the prediction: the cost model's share of the stage (the model's stage_costs, pp/balance.hpp)
// of the measured busy time of all stages together.
template <class M>
void print_stage_balance(const RunReport& r, const M& model, const TrainOptions& o) {
  const int p = o.mesh.pp, stages = o.virtual_stage_count();
  const std::vector<int> split = layer_split(model, o);
  const pp::StageCosts costs = model.stage_costs();
  const pp::ChunkMap map = o.chunk_map();
  const std::vector<double> predicted = pp::rank_costs(costs, split, map);
  std::vector<double> measured(p, 0);
  std::vector<std::string> layers(p);
  for (int g = 0; g < stages; ++g) {
    std::string& text = layers[map.rank(g)];
    text += (text.empty() ? "" : "+") + pp::half_split_text({split[g]});
  }
  for (const RankFigures& f : r.ranks)
    measured[int(f.pp)] += f.compute / (o.mesh.tp * o.mesh.dp * o.mesh.cp);
  double cost_sum = 0, busy_sum = 0;
  for (int s = 0; s < p; ++s) cost_sum += predicted[s], busy_sum += measured[s];
  std::printf(
      "\npipeline stages (layers %s; chunks joined by +): busy ms per step, predicted (the cost "
      "model's share of the measured total) / measured\n",
      o.pp_layers.empty() ? "auto" : "given");
  for (int s = 0; s < p; ++s)
    std::printf("  stage %d: layers %-8s %s%s %8.2f / %-8.2f\n", s, layers[s].c_str(),
                s == map.rank(0) ? "+embedding" : "          ",
                s == map.last_rank() ? "+head" : "     ", 1e3 * busy_sum * predicted[s] / cost_sum,
                1e3 * measured[s]);
}

// The context-parallel ring: bytes sent per step (CommStats / train/formulas.hpp) and the time
// spent waiting for its blocks, the share of the ring's transfers that the blocks' computation
// did not hide.
inline void print_context_parallel(const RunReport& r, const TrainOptions& o) {
  const double MiB = 1024.0 * 1024.0;
  std::printf(
      "\ncontext-parallel ring (CP=%d, %s split) per step per rank: MiB sent (measured / formula: "
      "cp-1 K,V blocks forward and 2(cp-1) backward per layer and microbatch), and the time "
      "waited for blocks (exposed communication) over the step\n",
      o.mesh.cp, to_string(o.cp_split));
  std::printf("%5s %9s %21s %12s %12s %9s\n", "rank", "tp,cp", "CP ring", "waited ms", "step ms",
              "exposed");
  for (std::size_t k = 0; k < r.ranks.size(); ++k) {
    const RankFigures& f = r.ranks[k];
    std::printf("%5zu %5.0f,%-3.0f %10.3f / %-8.3f %12.2f ", k, f.tp, f.cp, f.traffic.cp / MiB,
                f.formula.cp / MiB, 1e3 * f.cp_wait);
    if (f.end > 0)  // a run of one step has no measured step (the first warms up)
      std::printf("%12.2f %8.1f%%\n", 1e3 * f.end, 100 * f.cp_wait / f.end);
    else
      std::printf("%12s %9s\n", "n/a", "n/a");
  }
}

// The measured pipeline bubble (all ranks', and the busiest rank's) next to the schedule's
// formula.
inline void print_pipeline_bubble(const RunReport& r, const TrainOptions& o) {
  char bubble[120] = "n/a";
  if (!std::isnan(r.bubble))
    std::snprintf(bubble, sizeof bubble,
                  "%.3f (the busiest rank idles %.3f: fill and drain; the rest, lighter stages)",
                  r.bubble, r.busiest_idle);
  if (o.schedule == pp::ScheduleKind::zb_h1)
    std::printf(
        "\npipeline bubble: measured %s, formula (p-1)/(3m+p-1) = %.3f for equal F, B, W "
        "(Qi et al. 2023; p=%d, m=%d)\n",
        bubble, r.bubble_formula, o.mesh.pp, o.microbatches);
  else if (o.schedule == pp::ScheduleKind::zbv)
    std::printf(
        "\npipeline bubble: measured %s, idle/(3m+idle) with idle = max((p-1)/2, 2p-1-m) = %.3f "
        "for equal F, B, W (the simulated ZB-V; Qi et al. 2024: 0; p=%d, m=%d)\n",
        bubble, r.bubble_formula, o.mesh.pp, o.microbatches);
  else
    std::printf(
        "\npipeline bubble: measured %s, formula (p-1)/(%sm+p-1) = %.3f "
        "(p=%d, m=%d%s)\n",
        bubble, o.virtual_stages > 1 ? "v " : "", r.bubble_formula, o.mesh.pp, o.microbatches,
        o.virtual_stages > 1 ? (", v=" + std::to_string(o.virtual_stages)).c_str() : "");
}

// What one layer keeps per microbatch: measured (the most on any rank) next to the model's
// declared formula, never another model's.
inline void print_layer_activations(const RunReport& r) {
  const double MiB = 1024.0 * 1024.0;
  double measured = 0;
  for (const RankFigures& f : r.ranks) measured = std::max(measured, f.layer_activations);
  char got[32] = "n/a (no whole layer)", formula[96] = "not declared (model/model.hpp)";
  if (measured > 0) std::snprintf(got, sizeof got, "%.3f", measured / MiB);
  if (!r.ranks.empty() && !std::isnan(r.ranks[0].layer_formula))
    std::snprintf(formula, sizeof formula, "%.3f", r.ranks[0].layer_formula / MiB);
  std::printf(
      "one layer's activations per microbatch, MiB: measured %s (MemoryStats), the model's "
      "formula %s\n",
      got, formula);
}

template <class M>
void print_report(const RunReport& r, const M& model, const TrainOptions& o) {
  const double MiB = 1024.0 * 1024.0;
  std::printf(
      "\nmemory per rank, MiB (measured from the buffers; model states next to the ZeRO "
      "paper's formula, Rajbhandari et al. 2020 §5.1)\n");
  const bool cp = o.mesh.cp > 1;  // then each rank's CP coordinate follows its DP one
  std::printf("%5s %9s %11s %10s %10s %12s %10s %12s %12s\n", "rank",
              cp ? "tp,pp,dp,cp" : "tp,pp,dp", "parameters", "gradients", "optimizer", "states",
              "(formula)", "activations", "comm bufs");
  for (std::size_t k = 0; k < r.ranks.size(); ++k) {
    const RankFigures& f = r.ranks[k];
    char coord[32];
    std::snprintf(coord, sizeof coord, cp ? "%.0f,%.0f,%.0f,%.0f" : "%3.0f,%2.0f,%2.0f", f.tp, f.pp,
                  f.dp, f.cp);
    std::printf("%5zu %9s %11.3f %10.3f %10.3f %12.3f %10.3f %12.3f %12.3f\n", k, coord,
                f.parameters / MiB, f.gradients / MiB, f.optimizer / MiB,
                (f.parameters + f.gradients + f.optimizer) / MiB, f.states.total() / MiB,
                f.activations / MiB, f.buffers / MiB);
  }
  print_layer_activations(r);
  std::printf(
      "\nresident memory per rank, MiB: the buffers accounted above (row sum), the most bytes "
      "all buffers held at once since the start, the free blocks cached for reuse (bounded by "
      "that high-water mark), and the process's peak RSS (getrusage: buffers, code, MPI, "
      "libraries)\n");
  std::printf("%5s %12s %12s %12s %12s\n", "rank", "accounted", "buffers max", "cached",
              "peak RSS");
  for (std::size_t k = 0; k < r.ranks.size(); ++k) {
    const RankFigures& f = r.ranks[k];
    std::printf("%5zu %12.3f %12.3f %12.3f %12.3f\n", k,
                (f.parameters + f.gradients + f.optimizer + f.activations + f.buffers) / MiB,
                f.peak_live / MiB, f.cached / MiB, f.peak_rss / MiB);
  }
  std::printf(
      "\ntraffic per step per rank, MiB sent (measured by CommStats / formula; "
      "train/formulas.hpp cites each)\n");
  std::printf("%5s %21s %21s %21s %21s\n", "rank", "TP all-reduce", "PP point-to-point",
              o.mesh.cp > 1 ? "DPxCP reduction" : "DP reduction", "tied embedding");
  for (std::size_t k = 0; k < r.ranks.size(); ++k) {
    const Traffic &m = r.ranks[k].traffic, &f = r.ranks[k].formula;
    char tp[16] = "n/d";  // a model that declares no TP collectives: no formula
    if (!std::isnan(f.tp)) std::snprintf(tp, sizeof tp, "%.3f", f.tp / MiB);
    std::printf("%5zu %10.3f / %-8s %10.3f / %-8.3f %10.3f / %-8.3f %10.3f / %-8.3f\n", k,
                m.tp / MiB, tp, m.pp / MiB, f.pp / MiB, m.dp / MiB, f.dp / MiB, m.emb / MiB,
                f.emb / MiB);
  }
  if (!r.ranks.empty() && std::isnan(r.ranks[0].formula.tp))
    std::printf(
        "n/d: not declared: the model declares no TP collectives (model/model.hpp, "
        "kTpCollectives)\n");
  if (o.mesh.cp > 1) print_context_parallel(r, o);
  if (o.mesh.pp > 1) {
    print_stage_balance(r, model, o);
    print_pipeline_bubble(r, o);
  }
}

// The steps a run report measures: opened just before them (it resets the traffic counters and
// the memory peaks the report reads), closed by report(), which checks that the results it is
// given are the trainer's steps since. A report with no measured step (a one-step run) needs no
// window: its figures then include that step.
class ReportWindow {
 public:
  ReportWindow() = default;  // not open
  template <class Tr>
  explicit ReportWindow(const Tr& t) : first_(t.steps_done()) {
    comm_stats().reset();
    memory_stats().reset_peaks();
  }
  template <class M, class T, class S, class B>
  RunReport report(Trainer<M, T, S, B>& t, const std::vector<StepResult>& measured) const {
    const long long since = first_ < 0 ? 0 : t.steps_done() - first_;
    require(measured.empty() || (first_ >= 0 && since == static_cast<long long>(measured.size())),
            "run report: " + std::to_string(measured.size()) + " measured steps, but " +
                (first_ < 0 ? std::string("no ReportWindow was opened before them")
                            : "the trainer took " + std::to_string(since) +
                                  " since its ReportWindow opened") +
                " (train/report.hpp)");
    return make_report(t, measured);
  }

 private:
  int first_ = -1;
};

}  // namespace trident
