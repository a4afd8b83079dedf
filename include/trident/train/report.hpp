// trident/train/report.hpp: the run report — per rank, measured memory by kind and traffic per
// axis next to their formulas (formulas.hpp), the pipeline stages' busy time and the measured
// bubble (report_figures.hpp holds the figures, report_text.hpp prints them), over the steps a
// ReportWindow opens.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "report_text.hpp"

namespace trident {

// A Stage that measures what a layer's forward keeps (model/decoder_stage.hpp).
template <class Stage, class = void>
struct measures_layer_activations : std::false_type {};
template <class Stage>
struct measures_layer_activations<
    Stage, std::void_t<decltype(std::declval<const Stage&>().layer_activation_bytes())>>
    : std::true_type {};

// This rank's memory by kind (MemoryStats) and the formulas, next to each other.
template <class M, class T, class S, class B>
RankFigures rank_memory_figures(Trainer<M, T, S, B>& t) {
  RankFigures f;
  const MeshCoord c = t.mesh().coord();
  f.tp = c.tp;
  f.pp = c.pp;
  f.dp = c.dp;
  f.cp = c.cp;
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
  f.psi = double(local_parameters(t));
  return f;
}

// Measures intervals and CommStats over the `measured` steps, from counters reset just before them:
// use ReportWindow (below), which resets them and checks the count. Collective; the report is
// complete on world rank 0.
template <class M, class T, class S, class B>
RunReport make_report(Trainer<M, T, S, B>& t, const std::vector<StepResult>& measured) {
  RankFigures f = rank_memory_figures(t);
  const double n = std::max<std::size_t>(1, measured.size());
  f.traffic = measured_traffic(n);
  f.wire = measured_wire(n);
  f.activation = traffic_detail::activation_bytes(t);
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
  report.precision = plan::trident_precision<T, S>();
  const Comm& world = t.mesh().world();
  constexpr std::size_t kDoubles = sizeof(RankFigures) / sizeof(double);
  std::vector<double> all(kDoubles * world.size());
  world.all_gather(Span<const double>(reinterpret_cast<const double*>(&f), kDoubles),
                   Span<double>(all));
  report.ranks.resize(world.size());
  std::copy_n(all.data(), all.size(), reinterpret_cast<double*>(report.ranks.data()));
  double compute = 0, makespan = 0, most = 0;
  for (const RankFigures& r : report.ranks) {
    compute += r.compute;
    makespan = std::max(makespan, r.end);
    most = std::max(most, r.compute);
  }
  // no measured step (a run of one step): no bubble to report
  report.bubble = makespan > 0 ? 1.0 - compute / (report.ranks.size() * makespan) : std::nan("");
  report.busiest_idle = makespan > 0 ? 1.0 - most / makespan : std::nan("");
  const TrainOptions& o = t.options();
  // the schedule's formula with F = B = W (pp/schedule_traits.hpp, pp/bubble.hpp)
  report.bubble_formula =
      pp::traits(o.schedule).bubble_share(o.mesh.pp, o.microbatches, o.virtual_stages);
  return report;
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
