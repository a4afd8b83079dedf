// trident/io/run_json.hpp: a training run's report as JSON — the run's options, every step's
// loss, the throughput, and per rank the measured memory and traffic next to their formulas
// (train/report.hpp) — shared by the training programs, which add their model's shape.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../train/report.hpp"
#include "train_cli.hpp"

namespace trident {

// losses[k] is the loss of step first + k (0-based); tokens_per_s NaN (one step: no measured
// step) is written as null. config holds the run's options; the model's shape is the caller's.
inline nlohmann::json run_json(const TrainOptions& o, const RunFlags& f, const std::string& data,
                               const std::vector<double>& losses, int first, double tokens_per_s,
                               const std::vector<int>& skipped, const RunReport& report) {
  nlohmann::json j;
  j["config"] = {{"batch", o.batch},
                 {"steps", f.steps},
                 {"lr", o.optimizer.lr},
                 {"dtype", f.dtype},
                 {"precision", f.precision},
                 {"data", data},
                 {"tp", o.mesh.tp},
                 {"pp", o.mesh.pp},
                 {"dp", o.mesh.dp},
                 {"cp", o.mesh.cp},
                 {"cp_split", to_string(o.cp_split)},
                 {"zero", o.zero.stage},
                 {"overlap_grad_reduce", f.overlap},
                 {"sequence_parallel", o.sequence_parallel},
                 {"schedule", pp::to_string(o.schedule)},
                 {"microbatches", o.microbatches},
                 {"virtual_stages", o.virtual_stages},
                 {"recompute", to_string(o.recompute)}};
  j["first_step"] = first;
  j["losses"] = losses;
  j["final_loss"] = losses.back();
  j["tokens_per_s"] = tokens_per_s;
  j["skipped_steps"] = skipped;
  j["bubble"] = {{"measured", report.bubble},
                 {"busiest_rank_idle", report.busiest_idle},
                 {"formula", report.bubble_formula}};
  for (const RankFigures& r : report.ranks)
    j["ranks"].push_back({{"coord", {r.tp, r.pp, r.dp, r.cp}},
                          {"cp_wait_seconds_per_step", r.cp_wait},
                          {"memory_bytes",
                           {{"parameters", r.parameters},
                            {"gradients", r.gradients},
                            {"optimizer", r.optimizer},
                            {"activations_peak", r.activations},
                            {"buffers_peak", r.buffers},
                            {"all_buffers_peak", r.peak_live},
                            {"cached", r.cached},
                            {"peak_rss", r.peak_rss}}},
                          {"model_states_formula_bytes", r.states.total()},
                          {"traffic_bytes_per_step",
                           {{"tp", r.traffic.tp},
                            {"pp", r.traffic.pp},
                            {"dp", r.traffic.dp},
                            {"emb", r.traffic.emb},
                            {"cp", r.traffic.cp}}},
                          {"traffic_formula_bytes_per_step",
                           {{"tp", r.formula.tp},
                            {"pp", r.formula.pp},
                            {"dp", r.formula.dp},
                            {"emb", r.formula.emb},
                            {"cp", r.formula.cp}}}});
  return j;
}

// Text that is not UTF-8 (sampled bytes) is written with U+FFFD for the invalid sequences.
inline void write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream out(path);
  require(static_cast<bool>(out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                                << "\n"),
          "cannot write the report '" + path + "'");
}

}  // namespace trident
