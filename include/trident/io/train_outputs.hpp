// trident/io/train_outputs.hpp: what a training program (io/train_program.hpp) ends with, on
// rank 0: the closing lines (losses, throughput, skipped steps, the run report, the sample), the
// last step's timeline (--trace, --svg: rows named by rank, stage and TP/DP coordinates, time in
// ms) and --json (io/run_json.hpp, with the model's formulas); and the flags and the history of
// the steps they are made from.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "../mesh/topology.hpp"
#include "../pp/svg.hpp"
#include "../train/mfu.hpp"
#include "../train/report.hpp"
#include "../train/sample.hpp"
#include "../train/wait_attribution.hpp"
#include "../train/waits_text.hpp"
#include "chrome_trace.hpp"
#include "html_report.hpp"
#include "inference_cli.hpp"
#include "run_json.hpp"
#include "train_cli.hpp"

namespace trident {

// The program's own flags (the run's are RunFlags: io/train_cli.hpp).
struct ProgramFlags {
  TrainOptions o;
  RunFlags run;  // the mesh, schedule, ZeRO, data, steps, report (io/train_cli.hpp)
  std::string init, save, dump_grads, trace, svg, metrics, html;
  std::string write_config, config;  // --write-config; the effective configuration (TOML)
  // --resume: a checkpoint, or empty for the newest in --checkpoint-dir
  std::string checkpoint_dir, resume;
  bool resuming = false;
  bool no_waits = false;  // --no-waits: no attribution of waits (train/waits.hpp)
  int save_every = 0, keep = 0, stop_after = 0;
  InferenceFlags inference;  // --eval-every, --sample, ...
  cli::Option* resume_flag = nullptr;
};

// What the training loop records: every step's loss, the held-out losses, the skipped steps and
// the measured steps (all but the first, which warms up).
struct TrainHistory {
  int first = 0, last = 0;                 // steps [first, last) run by this process
  std::vector<double> losses, val_losses;  // val_losses[k]: held-out, after val_steps[k] steps
  std::vector<double> norms;               // the finite gradient norms so far
  std::vector<double> seconds;             // every step's
  std::vector<int> val_steps;
  std::vector<int> skipped;  // steps skipped for a non-finite loss or gradient norm
  std::vector<StepResult> measured;
  ReportWindow window;           // opened before the first measured step
  WaitAttribution waits;         // the measured steps' waits (train/wait_attribution.hpp)
  bool spike_explained = false;  // the first gradient-norm spike's lines printed
};

namespace program_detail {

// The timeline of the last measured step: every rank's intervals, gathered on rank 0.
inline pp::Timeline gather_timeline(const Comm& world, const std::vector<StepResult>& measured) {
  pp::Timeline timeline{world.size(), {}};
  std::vector<double> mine;  // 6 numbers per interval
  for (const pp::Interval& sp :
       measured.empty() ? std::vector<pp::Interval>{} : measured.back().intervals)
    mine.insert(mine.end(), {double(world.rank()), double(int(sp.kind)), double(sp.microbatch),
                             double(sp.chunk), sp.begin, sp.end});
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(world.size());
  world.all_gather(Span<const int>(&count, 1), Span<int>(counts));
  const int most = *std::max_element(counts.begin(), counts.end());
  mine.resize(most, -1.0);
  std::vector<double> all(std::size_t(most) * world.size());
  world.all_gather(Span<const double>(mine), Span<double>(all));
  for (std::size_t k = 0; k + 6 <= all.size(); k += 6)
    if (all[k] >= 0)
      timeline.intervals.push_back({int(all[k]), pp::IntervalKind(int(all[k + 1])), int(all[k + 2]),
                                    int(all[k + 3]), all[k + 4], all[k + 5]});
  return timeline;
}

// What the run ends with: throughput and MFU, the report, the sample.
struct Outcome {
  double tokens_per_s = 0;
  double flops_per_token = 0, mfu = 0;  // train/mfu.hpp
  HardwarePeak peak;
  RunReport report;
  std::vector<std::int32_t> sampled;
};

// "MFU 0.31 (...): 3 x forward = ... per token x tokens/s over the peak ..." (train/mfu.hpp).
inline void print_mfu(const Outcome& x) {
  const HardwarePeak& p = x.peak;
  if (!(p.flops > 0)) return (void)std::printf("MFU: n/a (%s)\n", p.source.c_str());
  std::printf(
      "MFU %.4f (Chowdhery et al. 2022, App. B): 3 x forward = %.4g MFLOP per token (the "
      "model's stage costs, Narayanan et al. 2021 §5.1) x %.0f tokens/s over a peak of %.4g "
      "GFLOP/s = %d x %.4g (%s)\n",
      x.mfu, x.flops_per_token / 1e6, x.tokens_per_s, p.flops / 1e9, p.devices, p.per_device / 1e9,
      p.source.c_str());
}

// Rank 0's closing lines: losses and throughput, skipped steps, the report, the sample.
template <class Tr>
void print_closing(const Tr& t, const ProgramFlags& f, const TrainHistory& h, const Outcome& x) {
  char throughput[64] = "n/a tokens/s (one step, which warms up)";
  if (!h.measured.empty())
    std::snprintf(throughput, sizeof throughput, "%.0f tokens/s (steps %d..%d)", x.tokens_per_s,
                  h.first + 1, h.last - 1);
  std::printf("\n%d steps: loss %.4f -> %.4f | %s | %s\n", h.last - h.first, h.losses.front(),
              h.losses.back(), throughput, t.mesh().to_string().c_str());
  if (!h.skipped.empty()) {
    std::printf("skipped %zu step(s) with a non-finite loss or gradient norm:", h.skipped.size());
    for (int s : h.skipped) std::printf(" %d", s);
    std::printf("\n");
  }
  print_mfu(x);
  print_report(x.report, t.model(), t.options());
  print_waits(h.waits);
  if (!x.sampled.empty())
    std::printf(
        "\nsample (%zu tokens after the prompt, temperature %g, top-k %d, seed %llu):\n%s%s\n",
        x.sampled.size(), f.inference.sample.temperature, f.inference.sample.top_k,
        static_cast<unsigned long long>(f.inference.sample.seed), f.inference.prompt.c_str(),
        tokens_as_text(x.sampled, t.model().vocab()).c_str());
}

// How a run's timeline is drawn: each row named by its rank, pipeline stage and TP (CP) DP
// coordinates (rank = tp + TP (cp + CP (dp + DP pp))), time in ms, captioned as measured.
inline pp::SvgOptions measured_svg(const MeshShape& m, const pp::Timeline& timeline) {
  pp::SvgOptions o;
  for (int r = 0; r < timeline.ranks; ++r) {
    const int tp = r % m.tp, cp = r / m.tp % m.cp, dp = r / (m.tp * m.cp) % m.dp,
              pp = r / (m.tp * m.cp * m.dp);
    o.row_names.push_back("rank " + std::to_string(r) + ": stage " + std::to_string(pp) + " (tp " +
                          std::to_string(tp) + (m.cp > 1 ? ", cp " + std::to_string(cp) : "") +
                          ", dp " + std::to_string(dp) + ")");
  }
  o.time_unit = "ms";
  o.time_scale = 1e3;
  const unsigned threads = std::thread::hardware_concurrency();
  o.caption = "measured: " + std::to_string(timeline.ranks) + " ranks on " +
              std::to_string(threads) + " hardware threads" +
              (unsigned(timeline.ranks) > threads
                   ? "; shared cores: a rank that waits still takes time its neighbours need"
                   : "");
  return o;
}

// The run's --json report.
template <class P, class Tr>
nlohmann::json report_json(const P& p, const Tr& t, const ProgramFlags& f, const TokenSource& data,
                           const TrainHistory& h, const Outcome& x) {
  nlohmann::json j = run_json(t.options(), f.run, data.name(), h.losses, h.first, x.tokens_per_s,
                              h.skipped, x.report);
  j["config"].update(p.config_json());
  j["config_file"] = f.config;  // rerun: write it to a file, pass it to --config
  j["mfu"] = {
      {"value", x.mfu},
      {"model_flops_per_token", x.flops_per_token},
      {"peak_flops", x.peak.flops},
      {"peak_flops_per_device", x.peak.per_device},
      {"devices", x.peak.devices},
      {"peak_source", x.peak.source},
      {"form", "model_flops_per_token x tokens_per_s / peak_flops"},
      {"source", "Chowdhery et al. 2022 (PaLM), App. B; FLOPs: Narayanan et al. 2021 §5.1"}};
  using Model = std::decay_t<decltype(t.model())>;
  const int tp_calls = tp_calls_per_layer<Model>(t.options());
  j["formulas"]["traffic"]["tp_calls_per_layer_and_microbatch"] =
      tp_calls < 0 ? nlohmann::json() : nlohmann::json(tp_calls);  // null: not declared
  if (t.options().mesh.pp > 1) {
    std::vector<double> layers;  // per virtual stage, in pipeline order
    for (int halves : layer_split(t.model(), t.options())) layers.push_back(halves / 2.0);
    j["formulas"]["layers_per_virtual_stage"] = layers;
  }
  j["waits"] = waits_json(h.waits);
  j["param_count"] = p.parameter_count();
  j["val_steps"] = h.val_steps;  // val_losses[k]: the held-out loss after val_steps[k] steps
  j["val_losses"] = h.val_losses;
  j["sample_tokens"] = x.sampled;
  j["sample"] = tokens_as_text(x.sampled, t.model().vocab());
  j["step_seconds"] = h.seconds;  // every step's, the first (a warm-up) too
  p.extend_json(j);
  return j;
}

// Rank 0's files: --trace, --svg, --json, --html.
template <class P, class Tr>
void write_outputs(const Comm& world, const P& p, const Tr& t, const ProgramFlags& f,
                   const TokenSource& data, const TrainHistory& h, const Outcome& x) {
  const pp::Timeline timeline = gather_timeline(world, h.measured);  // collective: every rank
  if (world.rank() != 0) return;
  std::vector<std::string> names;
  for (int r = 0; r < world.size(); ++r) names.push_back("rank " + std::to_string(r));
  if (!f.trace.empty()) io::write_chrome_trace(f.trace, timeline, names);
  const std::string title = std::string(P::kName) + ", last step, " + t.mesh().to_string();
  const pp::SvgOptions look = program_detail::measured_svg(t.options().mesh, timeline);
  if (!f.svg.empty()) pp::write_timeline_svg(f.svg, timeline, title, look);
  if (f.run.json.empty() && f.html.empty()) return;
  const nlohmann::json j = report_json(p, t, f, data, h, x);
  if (!f.run.json.empty()) write_json(f.run.json, j);
  if (!f.html.empty())
    io::write_text(f.html,
                   io::training_report_html(j, std::string(P::kName) + ": " + t.mesh().to_string(),
                                            pp::timeline_svg(timeline, title, look)));
}

}  // namespace program_detail

}  // namespace trident
