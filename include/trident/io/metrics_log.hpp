// trident/io/metrics_log.hpp: --metrics FILE.jsonl, one JSON line per training step, written by
// world rank 0 as the run goes and flushed, so that a run can be plotted while it trains (as
// torchtitan's and Megatron's metric loggers write theirs); held-out losses on lines of their own.
//
// A step's line:
//   {"step", "loss", "grad_norm", "lr", "seconds", "tokens_per_s", "mfu", "skipped", "warmup",
//    "memory_peak_bytes": {kind: the largest of the ranks' peaks during the step},
//    "traffic_bytes": {axis: the largest of the ranks' bytes of the step, core/stats.hpp's count},
//    "waits": {"compute_s", "exposed_s", "waiting_s": per rank, "waited_for_s": {group: the
//              seconds all ranks waited for each rank}} (train/waits.hpp; null for the warm-up),
//    "aux_loss", "expert_load": a mixture of experts' (train/expert_figures.hpp; 0 without)}
// An evaluation's: {"step": the step it follows, "steps_done", "val_loss", "eval_batches"}.
// mfu is train/mfu.hpp's, over the peak written in the run's JSON (null when no peak is known).
// A resumed run appends: the steps redone since the checkpoint appear again, and the later lines
// are the ones that count.
#pragma once

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../train/mfu.hpp"
#include "../train/report_figures.hpp"
#include "../train/trainer.hpp"
#include "../train/wait_attribution.hpp"

namespace trident {

class MetricsLog {
 public:
  MetricsLog() = default;  // no file: nothing gathered, nothing written

  // Opens `path` on world rank 0 (appending when `append`); every rank fails alike when it
  // cannot. Collective.
  MetricsLog(const Comm& world, const std::string& path, bool append) : path_(path) {
    int opened = 0;
    if (world.rank() == 0) {
      out_ = std::make_unique<std::ofstream>(path, append ? std::ios::app : std::ios::trunc);
      opened = *out_ ? 1 : 0;
    }
    world.broadcast(Span<int>(&opened, 1), 0);
    require(opened == 1, "--metrics: cannot write " + path);
  }
  bool enabled() const { return !path_.empty(); }

  // What MFU is computed with (train/mfu.hpp).
  void set_mfu(double flops_per_token, const HardwarePeak& peak) {
    flops_per_token_ = flops_per_token;
    peak_ = peak;
  }

  // Before a step: its memory peaks and traffic count from here.
  void begin_step() {
    if (!enabled()) return;
    memory_stats().reset_step_peaks();
    before_ = measured_traffic(1);
  }

  // After step `s`, which trained `tokens` tokens: the ranks' figures gathered (collective), the
  // line written on world rank 0.
  void step(const Comm& world, int s, const StepResult& r, double tokens, bool warmup,
            const WaitAttribution* waits) {
    if (!enabled()) return;
    const Traffic after = measured_traffic(1);
    std::vector<double> mine;  // the memory kinds' step peaks, then the axes' bytes
    for (int k = 0; k < kMemoryKinds; ++k)
      mine.push_back(double(memory_stats().step_peak(static_cast<MemoryKind>(k))));
    mine.insert(mine.end(), {after.tp - before_.tp, after.pp - before_.pp, after.dp - before_.dp,
                             after.emb - before_.emb, after.cp - before_.cp});
    world.all_reduce(Span<double>(mine), ReduceOp::max);
    if (world.rank() != 0) return;
    const double tokens_per_s = tokens / r.seconds;
    nlohmann::json memory, traffic;
    for (int k = 0; k < kMemoryKinds; ++k) memory[kKinds[k]] = mine[std::size_t(k)];
    const char* axes[] = {"tp", "pp", "dp", "emb", "cp"};
    for (int a = 0; a < 5; ++a) traffic[axes[a]] = mine[std::size_t(kMemoryKinds + a)];
    write({{"step", s},
           {"loss", r.loss},
           {"grad_norm", r.grad_norm},
           {"lr", r.lr},
           {"seconds", r.seconds},
           {"tokens_per_s", tokens_per_s},
           {"mfu", model_flops_utilization(flops_per_token_, tokens_per_s, peak_)},
           {"skipped", r.skipped},
           {"warmup", warmup},
           {"memory_peak_bytes", memory},
           {"traffic_bytes", traffic},
           {"waits", waits && waits->enabled() ? waits_json(waits->last()) : nlohmann::json()},
           {"aux_loss", r.aux_loss},
           {"expert_load", r.expert_load}});
  }

  // Per rank: compute, exposed communication and waiting seconds; per group, the seconds all
  // ranks waited for each rank.
  static nlohmann::json waits_json(const std::vector<RankWaits>& w) {
    nlohmann::json j;
    const std::size_t n = w.size();
    for (const RankWaits& r : w) {
      j["compute_s"].push_back(r.compute);
      j["exposed_s"].push_back(r.exposed);
      j["waiting_s"].push_back(r.waiting);
    }
    for (int g = 0; g < kWaitGroups; ++g) {
      std::vector<double> culprits(n, 0.0);
      for (const RankWaits& r : w)
        for (std::size_t c = 0; c < n; ++c) culprits[c] += r.waited_for[g * n + c];
      j["waited_for_s"][wait_group_name(g)] = culprits;
    }
    return j;
  }

  // A held-out loss after `steps_done` steps (world rank 0 writes it).
  void eval(const Comm& world, int steps_done, double loss, int batches) {
    if (enabled() && world.rank() == 0)
      write({{"step", steps_done - 1},
             {"steps_done", steps_done},
             {"val_loss", loss},
             {"eval_batches", batches}});
  }

 private:
  // MemoryKind's order, as the run JSON names the kinds
  static constexpr const char* kKinds[kMemoryKinds] = {"parameters", "gradients", "optimizer",
                                                       "activations", "buffers"};
  void write(const nlohmann::json& line) {
    *out_ << line.dump() << "\n";
    out_->flush();
  }

  std::string path_;
  std::unique_ptr<std::ofstream> out_;  // world rank 0's
  double flops_per_token_ = 0;
  HardwarePeak peak_;
  Traffic before_;
};

}  // namespace trident
