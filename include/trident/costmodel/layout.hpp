// trident/costmodel/layout.hpp: the parallel layout chosen for a run (train_gpt --layout auto).
//
// Every layout of the model on the world's ranks is enumerated — meshes TP x CP x PP x DP, ZeRO
// stages, microbatches (1 without a pipeline; p or 2p with one), the schedules 1F1B, ZB-H1,
// interleaved and ZB-V (v = 2), SP, full recomputation — and the valid ones (the trainer's own
// validate) kept. Those whose predicted peak (model states, activations and communication
// buffers of the most loaded rank: trident_memory.hpp, trident_buffers.hpp) exceeds the memory
// limit are dropped; the rest are ranked by the step time the cost model predicts (predict.hpp)
// on this machine (layout_calibration.hpp: each rate measured once, kept per machine and build);
// the best few are run for a few steps each (measured.hpp) and the fastest measured wins. Every
// rank takes the same decision: the enumeration is the same everywhere and a measured step time
// is the slowest rank's. On two nodes CP is left out of the search (the link's pricing knows
// the TP, DP and PP groups only).
#pragma once

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../plan/planner.hpp"
#include "inter_node.hpp"
#include "layout_calibration.hpp"
#include "measured.hpp"
#include "trident_buffers.hpp"

namespace trident::costmodel {

struct LayoutSearch {
  double memory_limit = 0;       // bytes per rank (states, activations, buffers); 0: no limit
  bool context_parallel = true;  // CP > 1 layouts (not across nodes)
  int trials = 4;                // layouts run, the best predicted
  int trial_steps = 2;           // measured steps each, after one that warms up
  std::vector<int> zero_stages{0, 1, 2, 3};
  std::string
      calibration_cache;  // measurements kept and reused (io/calibration_cache.hpp); "": none
};

// Peaks are a rank's model states + peak activations + peak communication buffers (each kind's
// own peak, as MemoryStats counts them), the most of any rank.
struct LayoutCandidate {
  gpt2::Options options;
  double peak_bytes = 0;        // predicted
  double buffer_bytes = 0;      // predicted, of peak_bytes: the buffers (trident_buffers.hpp)
  double predicted_s = 0;       // predicted step time
  double measured_s = 0;        // measured step time (0: not tried)
  double measured_peak = 0;     // measured
  double measured_buffers = 0;  // measured, of measured_peak: the buffers
};

struct LayoutChoice {
  int valid = 0, refused = 0;  // layouts enumerated that the trainer's validate took and refused
  int over_memory = 0;         // valid layouts dropped for memory
  std::vector<LayoutCandidate> fitting;  // the others, by predicted step time
  int tried = 0, winner = 0;             // fitting[0, tried) were run; fitting[winner] won
  double memory_limit = 0;
  double calibration_s = 0;                              // seconds the calibration took here
  int calibration_reused = 0, calibration_measured = 0;  // measurements from the cache, taken
  std::string calibration_cache;                         // its file ("": none)
  const gpt2::Options& chosen() const { return fitting[std::size_t(winner)].options; }
};

// The memory limit --layout auto takes by default: the node's physical memory over its ranks.
inline double node_memory_per_rank(const Comm& world) {
  const double bytes = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  return bytes / node_comm(world).size();
}

// "TP2-CP2-PP2-DP1 ZeRO-1 1f1b m=4 SP recompute"
inline std::string layout_name(const gpt2::Options& o) {
  const auto n = [](int x) { return std::to_string(x); };
  std::string s = "TP" + n(o.mesh.tp) + (o.mesh.cp > 1 ? "-CP" + n(o.mesh.cp) : "") + "-PP" +
                  n(o.mesh.pp) + "-DP" + n(o.mesh.dp) + " ZeRO-" + n(o.zero.stage);
  if (o.mesh.pp > 1) s += std::string(" ") + pp::to_string(o.schedule);
  s += " m=" + n(o.microbatches);
  if (o.sequence_parallel) s += " SP";
  if (o.recompute == Recompute::full) s += " recompute";
  if (o.recompute == Recompute::selective) s += " selective recompute";
  return s;
}

// The predicted peak of model states, activations and buffers over the pipeline stages: the
// total's and that stage's buffers.
struct PredictedPeak {
  double total = 0, buffers = 0;
};
inline PredictedPeak predicted_peak(const gpt2::Options& o, const Precision& p) {
  PredictedPeak peak;
  for (int s = 0; s < o.mesh.pp; ++s) {
    const double b = stage_buffer_bytes(o, s, p);
    const double total = stage_model_states(o, s, p).total() + stage_activation_bytes(o, s, p) + b;
    if (total > peak.total) peak = {total, b};
  }
  return peak;
}

namespace detail {
// The layouts of mesh `mesh` (microbatches, schedules, SP, recomputation, ZeRO) that validate.
inline void add_mesh_layouts(std::vector<gpt2::Options>& out, int& refused,
                             const gpt2::Options& base, const MeshShape& mesh,
                             const LayoutSearch& s, int world) {
  if (base.batch % mesh.dp) return;
  const int rows = base.batch / mesh.dp, p = mesh.pp;
  using K = pp::ScheduleKind;
  const std::vector<K> schedules =
      p == 1 ? std::vector<K>{K::one_f_one_b}
             : std::vector<K>{K::one_f_one_b, K::zb_h1, K::interleaved, K::zbv};
  for (int m : p == 1 ? std::vector<int>{1} : std::vector<int>{p, 2 * p})
    for (K schedule : schedules)
      for (bool sp : {false, true})
        for (Recompute r : {Recompute::none, Recompute::full})
          for (int zero : s.zero_stages) {
            // a stage that shards over a group of one is stage 0
            const bool shards = ZeroPolicy{zero}.shards_optimizer();
            if (rows % m || (sp && mesh.tp == 1) || (shards && mesh.dp * mesh.cp == 1)) continue;
            gpt2::Options o = base;
            o.mesh = mesh;
            o.microbatches = m;
            o.schedule = schedule;
            o.sequence_parallel = sp;
            o.recompute = r;
            o.zero.stage = zero;
            o.pp_layers.clear();
            o.virtual_stages = pp::traits(schedule).min_chunks;
            try {
              validate(o, world);
            } catch (const Error&) {
              ++refused;
              continue;
            }
            out.push_back(o);
          }
}
}  // namespace detail

// Every valid layout of `base`'s model, batch and optimizer on `world` ranks; `refused` (when
// given) counts those enumerated that the trainer's validate refused.
inline std::vector<gpt2::Options> layout_candidates(const gpt2::Options& base, int world,
                                                    const LayoutSearch& s = {},
                                                    int* refused = nullptr) {
  std::vector<gpt2::Options> out;
  int no = 0;
  for (int tp : plan::divisors(world, world))
    for (int cp : plan::divisors(world / tp, s.context_parallel ? world : 1))
      for (int pp : plan::divisors(world / (tp * cp), base.model.layers))
        detail::add_mesh_layouts(out, no, base, {tp, pp, world / (tp * cp * pp), cp}, s, world);
  if (refused) *refused = no;
  return out;
}

// The layouts of `base` on `world`'s ranks within the memory limit, by predicted step time (none
// tried yet); trident::Error when none is valid or none fits. Collective.
inline LayoutChoice rank_layouts(const Comm& world, const gpt2::Options& base,
                                 const LayoutSearch& s, const Precision& p) {
  const double started = trident::detail::now_seconds();
  CalibrationCache cache(world, s.calibration_cache);
  LayoutCalibration cal(world, cache);
  LayoutSearch search = s;
  search.context_parallel = s.context_parallel && cal.nodes() == 1;
  LayoutChoice c;
  const std::vector<gpt2::Options> all = layout_candidates(base, world.size(), search, &c.refused);
  require(!all.empty(), "no valid layout of the model on " + std::to_string(world.size()) +
                            " ranks: no mesh TP x CP x PP x DP of them divides its " +
                            std::to_string(base.model.heads) + " heads, " +
                            std::to_string(base.model.layers) + " layers, " +
                            std::to_string(base.model.seq) + " tokens and batch of " +
                            std::to_string(base.batch));
  c.valid = int(all.size());
  c.memory_limit = s.memory_limit;
  LayoutCandidate smallest;
  for (const gpt2::Options& o : all) {
    const PredictedPeak peak = predicted_peak(o, p);
    LayoutCandidate k{o, peak.total, peak.buffers};
    if (smallest.peak_bytes == 0 || k.peak_bytes < smallest.peak_bytes) smallest = k;
    if (s.memory_limit > 0 && k.peak_bytes > s.memory_limit)
      ++c.over_memory;
    else
      c.fitting.push_back(k);
  }
  const double MiB = 1024.0 * 1024.0;
  char sizes[128];
  std::snprintf(sizes, sizeof sizes, "%.2f MiB per rank: the smallest predicted peak is %.2f MiB",
                s.memory_limit / MiB, smallest.peak_bytes / MiB);
  require(!c.fitting.empty(), std::string("no layout fits the memory limit of ") + sizes + ", of " +
                                  layout_name(smallest.options));
  for (LayoutCandidate& k : c.fitting)
    k.predicted_s = predict(k.options, p, cal.machine(world, k.options)).step_s;
  cache.save(world);
  c.calibration_s = world.all_reduce_value(trident::detail::now_seconds() - started, ReduceOp::max);
  c.calibration_reused = cache.reused();
  c.calibration_measured = cache.measured();
  c.calibration_cache = s.calibration_cache;
  std::stable_sort(c.fitting.begin(), c.fitting.end(),
                   [](const LayoutCandidate& a, const LayoutCandidate& b) {
                     return a.predicted_s < b.predicted_s;
                   });
  return c;
}

// Layout x measured: `steps` steps after one that warms up; the step time is the slowest rank's
// (the same on every rank), the peak the most of any rank's states, activations and buffers
// (world rank 0). Collective.
template <class T, class S>
void measure_layout(const Comm& world, LayoutCandidate& x, const TokenSource& data, int steps) {
  const MeasuredRun m = measure_run<T, S>(world, x.options, data, steps);
  x.measured_s = m.step_s;
  for (const RankFigures& r : m.report.ranks) {
    const double total = r.parameters + r.gradients + r.optimizer + r.activations + r.buffers;
    if (total > x.measured_peak) {
      x.measured_peak = total;
      x.measured_buffers = r.buffers;
    }
  }
}

// rank_layouts, then the best `s.trials` measured and the fastest of them the winner. Collective.
template <class T, class S>
LayoutChoice choose_layout(const Comm& world, const gpt2::Options& base, const TokenSource& data,
                           const LayoutSearch& s) {
  LayoutChoice c = rank_layouts(world, base, s, trident_precision<T, S>());
  c.tried = std::min(std::max(s.trials, 1), int(c.fitting.size()));
  for (int k = 0; k < c.tried; ++k) {
    measure_layout<T, S>(world, c.fitting[std::size_t(k)], data, s.trial_steps);
    if (c.fitting[std::size_t(k)].measured_s < c.fitting[std::size_t(c.winner)].measured_s)
      c.winner = k;
  }
  return c;
}

// The choice as a table (world rank 0): the layouts tried, predicted next to measured.
inline void print_layout_choice(const LayoutChoice& c, int world) {
  const double MiB = 1024.0 * 1024.0;
  char limit[64] = "none";
  if (c.memory_limit > 0)
    std::snprintf(limit, sizeof limit, "%.1f MiB per rank", c.memory_limit / MiB);
  std::printf(
      "\nlayout auto: %d valid layouts on %d ranks (%d more enumerated, refused by the trainer's "
      "validate); %d over the memory limit (%s); %zu ranked by the cost model calibrated here "
      "(costmodel/predict.hpp), the best %d run for a few steps each; peak = model states + "
      "activations + communication buffers of the most loaded rank, MiB\n",
      c.valid, world, c.refused, c.over_memory, limit, c.fitting.size(), c.tried);
  if (c.calibration_cache.empty())
    std::printf("calibration: %d measurements in %.1f s (no cache file)\n", c.calibration_measured,
                c.calibration_s);
  else
    std::printf("calibration: %d measurements reused from %s, %d taken, %.1f s\n",
                c.calibration_reused, c.calibration_cache.c_str(), c.calibration_measured,
                c.calibration_s);
  std::printf("%4s %-44s %10s %10s %9s %9s %11s %10s\n", "rank", "layout", "peak pred", "peak meas",
              "buf pred", "buf meas", "step s pred", "step meas");
  for (int k = 0; k < c.tried; ++k) {
    const LayoutCandidate& x = c.fitting[std::size_t(k)];
    std::printf("%4d %-44s %10.2f %10.2f %9.2f %9.2f %11.4f %10.4f%s\n", k + 1,
                layout_name(x.options).c_str(), x.peak_bytes / MiB, x.measured_peak / MiB,
                x.buffer_bytes / MiB, x.measured_buffers / MiB, x.predicted_s, x.measured_s,
                k == c.winner ? "  <- chosen (fastest measured)" : "");
  }
  std::fflush(stdout);
}

}  // namespace trident::costmodel
