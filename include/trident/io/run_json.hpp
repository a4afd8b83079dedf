// trident/io/run_json.hpp: a training run's report as JSON — the run's options, every step's
// loss, the throughput, and per rank the measured memory and traffic next to their formulas
// (train/report.hpp) — shared by the training programs, which add their model's shape.
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../train/report.hpp"
#include "../train/report_formulas.hpp"
#include "../train/wait_attribution.hpp"
#include "train_cli.hpp"

namespace trident {

// The formulas next to the report's values, as the text report prints them: each form with its
// inputs (train/report_formulas.hpp). The model's own (TP's calls, the pipeline split) are added
// by the program, which knows the model (io/train_program.hpp).
inline nlohmann::json formulas_json(const TrainOptions& o, const RunReport& report) {
  const plan::Precision& p = report.precision;
  nlohmann::json f;
  f["model_states"] = {
      {"form", zero_states_form(o.zero, p)},
      {"source", "Rajbhandari et al. 2020 (ZeRO) §5.1"},
      {"bytes_per_element",
       {{"parameters", p.param_bytes}, {"gradients", p.grad_bytes}, {"K", p.optimizer_bytes}}},
      {"Nd", o.mesh.dp * o.mesh.cp},
      {"psi",
       "ranks[k].psi: the parameters of rank k's TP shard of its pipeline stage, padded "
       "to a multiple of Nd"}};
  if (o.mesh.pp > 1) {
    const BubbleForm b = bubble_form(o);
    f["bubble"] = {{"form", b.form},
                   {"fraction", b.fraction},
                   {"source", b.source},
                   {"p", o.mesh.pp},
                   {"m", o.microbatches},
                   {"v", o.virtual_stages},
                   {"value", report.bubble_formula}};
  }
  double layer = 0;
  for (const RankFigures& r : report.ranks) layer = std::max(layer, r.layer_activations);
  const double declared = report.ranks.empty() ? std::nan("") : report.ranks[0].layer_formula;
  f["layer_activations_bytes"] = {
      {"measured", layer},
      {"formula", std::isnan(declared) ? nlohmann::json() : nlohmann::json(declared)}};
  f["traffic"] = {{"convention",
                   "buffers: each call's whole buffer, as the papers count (an all-reduce of "
                   "Ψ elements counts Ψ); ranks[k].traffic_wire_bytes_per_step: on the wire"},
                  {"b_s_h_bytes", report.ranks.empty() ? 0.0 : report.ranks[0].activation},
                  {"microbatches", o.microbatches},
                  {"wire",
                   "a buffer of B bytes over n ranks sends 2(n-1)/n B (all-reduce) or (n-1)/n B "
                   "(reduce-scatter, all-gather) with a ring or recursive halving and doubling "
                   "(Thakur et al. 2005); B on a point-to-point link"}};
  return f;
}

// Bytes per step per axis.
inline nlohmann::json traffic_json(const Traffic& t) {
  return {{"tp", t.tp}, {"pp", t.pp}, {"dp", t.dp}, {"emb", t.emb}, {"cp", t.cp}};
}

// One rank's figures: memory by kind, model states and traffic next to their formulas.
inline nlohmann::json rank_json(const RankFigures& r) {
  return {{"coord", {r.tp, r.pp, r.dp, r.cp}},
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
          {"psi", r.psi},
          {"traffic_bytes_per_step", traffic_json(r.traffic)},
          {"traffic_formula_bytes_per_step", traffic_json(r.formula)},
          {"traffic_wire_bytes_per_step", traffic_json(r.wire)}};
}

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
  for (const RankFigures& r : report.ranks) j["ranks"].push_back(rank_json(r));
  j["formulas"] = formulas_json(o, report);
  return j;
}

// Who made whom wait (train/waits.hpp): per rank, seconds per measured step of the step, compute,
// exposed communication, waiting and the slow fault's sleeps, and per group the seconds it
// waited for each rank; null when not attributed.
inline nlohmann::json waits_json(const WaitAttribution& waits) {
  if (!waits.enabled() || waits.steps() == 0) return nullptr;
  nlohmann::json j;
  j["steps"] = waits.steps();
  j["attribution_seconds_per_step"] = waits.seconds() / waits.steps();  // after each step
  const std::size_t n = waits.total().size();
  for (const RankWaits& r : waits.total()) {
    const double k = waits.steps();
    nlohmann::json x = {{"step", r.step / k},         {"compute", r.compute / k},
                        {"exposed", r.exposed / k},   {"waiting", r.waiting / k},
                        {"injected", r.injected / k}, {"other", r.other() / k}};
    for (int g = 0; g < kWaitGroups; ++g) {
      std::vector<double> culprits(n);
      for (std::size_t c = 0; c < n; ++c) culprits[c] = r.waited_for[g * n + c] / k;
      x["waited_for"][wait_group_name(g)] = culprits;
    }
    j["ranks"].push_back(x);
  }
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
