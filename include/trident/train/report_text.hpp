// trident/train/report_text.hpp: the run report as text — memory per rank by kind next to the
// ZeRO paper's formula with its inputs, traffic per axis in both byte conventions, the pipeline
// stages' busy time next to the model's stage costs (pp/balance.hpp), and the measured bubble
// next to (p-1)/(m+p-1) (Huang et al. 2019; interleaved: (p-1)/(v m + p-1), Narayanan et al.
// 2021; ZB-H1 with F = B = W: (p-1)/(3m+p-1), Qi et al. 2023). Lines stay within ~120
// characters; each table's legend is under it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "report_figures.hpp"
#include "report_formulas.hpp"

namespace trident {

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
  for (int s = 0; s < p; ++s) {
    cost_sum += predicted[s];
    busy_sum += measured[s];
  }
  std::printf(
      "\npipeline stages (layers %s; chunks joined by +): busy ms per step, predicted (the\n"
      "cost model's share of the measured total) / measured\n",
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
      "\ncontext-parallel ring (CP=%d, %s split) per step per rank: MiB sent (measured / formula:\n"
      "cp-1 K,V blocks forward and 2(cp-1) backward per layer and microbatch), and the time\n"
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
// formula with its inputs.
inline void print_pipeline_bubble(const RunReport& r, const TrainOptions& o) {
  char bubble[32] = "n/a";
  if (!std::isnan(r.bubble)) std::snprintf(bubble, sizeof bubble, "%.3f", r.bubble);
  const int p = o.mesh.pp, m = o.microbatches, v = o.virtual_stages;
  const BubbleForm f = bubble_form(o);
  std::printf("\npipeline bubble: measured %s, formula %s = %s%s%.3f\n  (%s; p=%d, m=%d%s)\n",
              bubble, f.form.c_str(), f.fraction.c_str(), f.fraction.empty() ? "" : " = ",
              r.bubble_formula, f.source.c_str(), p, m,
              v > 1 ? (", v=" + std::to_string(v)).c_str() : "");
  if (std::isnan(r.bubble)) return;
  std::printf(
      "  the busiest rank idles %.3f of the step: fill and drain; the rest of the measured\n"
      "  bubble is the lighter stages' idle time\n",
      r.busiest_idle);
  if (r.ranks.size() > std::thread::hardware_concurrency())
    std::printf(
        "  (measured on shared cores: %zu ranks on %u hardware threads; a rank that waits still\n"
        "  takes time its neighbours need, so the measured bubble is noisy)\n",
        r.ranks.size(), std::thread::hardware_concurrency());
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

namespace report_detail {

// Ranks as ranges: "0-3", "0,2,4-5".
inline std::string ranks_text(const std::vector<int>& ranks) {
  std::string text;
  for (std::size_t k = 0; k < ranks.size();) {
    std::size_t e = k;
    while (e + 1 < ranks.size() && ranks[e + 1] == ranks[e] + 1) ++e;
    text += (text.empty() ? "" : ",") + std::to_string(ranks[k]) +
            (e > k ? "-" + std::to_string(ranks[e]) : "");
    k = e + 1;
  }
  return text;
}

// 223616 -> "223,616".
inline std::string with_commas(double count) {
  std::string digits = std::to_string((long long)std::llround(count)), out;
  for (std::size_t k = 0; k < digits.size(); ++k) {
    if (k > 0 && (digits.size() - k) % 3 == 0) out += ',';
    out += digits[k];
  }
  return out;
}

// Under the memory table: the model states' formula with its inputs, and what the columns hold.
inline void print_memory_legend(const RunReport& r, const TrainOptions& o) {
  const double MiB = 1024.0 * 1024.0;
  const plan::Precision& p = r.precision;
  const bool master = p.optimizer_bytes > 2 * p.activation_bytes;
  std::printf("(formula): ZeRO-%d's %s bytes, K = %g (%s), Nd = %d (%s), Ψ = the\n", o.zero.stage,
              zero_states_form(o.zero, p).c_str(), p.optimizer_bytes,
              master ? "fp32 master weights and Adam's 2 moments" : "Adam's 2 moments",
              o.mesh.dp * o.mesh.cp, o.mesh.cp > 1 ? "DP x CP" : "DP");
  std::printf(
      "  parameters of the rank's TP shard of its pipeline stage, padded to a multiple of Nd:\n");
  std::vector<double> seen;
  for (const RankFigures& f : r.ranks) {
    if (std::find(seen.begin(), seen.end(), f.psi) != seen.end()) continue;
    seen.push_back(f.psi);
    std::vector<int> ranks;
    for (std::size_t k = 0; k < r.ranks.size(); ++k)
      if (r.ranks[k].psi == f.psi) ranks.push_back(int(k));
    std::printf("  Ψ = %s on ranks %s -> %.3f MiB\n", with_commas(f.psi).c_str(),
                ranks_text(ranks).c_str(), f.states.total() / MiB);
  }
  std::printf(
      "activations: the peak of the stashes the schedule keeps in flight; comm bufs: the peak of\n"
      "  temporaries (ZeRO's gathered units and reduce-scatter shards, pipeline messages, partial\n"
      "  sums before a TP all-reduce)\n");
}

inline void print_memory(const RunReport& r, const TrainOptions& o) {
  const double MiB = 1024.0 * 1024.0;
  std::printf(
      "\nmemory per rank, MiB: measured from the buffers; model states next to the ZeRO paper's\n"
      "formula (Rajbhandari et al. 2020 §5.1)\n");
  const bool cp = o.mesh.cp > 1;  // then each rank's CP coordinate follows its DP one
  std::printf("%5s %9s %11s %10s %10s %10s %10s %12s %10s\n", "rank",
              cp ? "tp,pp,dp,cp" : "tp,pp,dp", "parameters", "gradients", "optimizer", "states",
              "(formula)", "activations", "comm bufs");
  for (std::size_t k = 0; k < r.ranks.size(); ++k) {
    const RankFigures& f = r.ranks[k];
    char coord[32];
    std::snprintf(coord, sizeof coord, cp ? "%.0f,%.0f,%.0f,%.0f" : "%3.0f,%2.0f,%2.0f", f.tp, f.pp,
                  f.dp, f.cp);
    std::printf("%5zu %9s %11.3f %10.3f %10.3f %10.3f %10.3f %12.3f %10.3f\n", k, coord,
                f.parameters / MiB, f.gradients / MiB, f.optimizer / MiB,
                (f.parameters + f.gradients + f.optimizer) / MiB, f.states.total() / MiB,
                f.activations / MiB, f.buffers / MiB);
  }
  print_memory_legend(r, o);
  print_layer_activations(r);
}

inline void print_resident(const RunReport& r) {
  const double MiB = 1024.0 * 1024.0;
  std::printf("\nresident memory per rank, MiB\n");
  std::printf("%5s %12s %12s %12s %12s\n", "rank", "accounted", "buffers max", "cached",
              "peak RSS");
  for (std::size_t k = 0; k < r.ranks.size(); ++k) {
    const RankFigures& f = r.ranks[k];
    std::printf("%5zu %12.3f %12.3f %12.3f %12.3f\n", k,
                (f.parameters + f.gradients + f.optimizer + f.activations + f.buffers) / MiB,
                f.peak_live / MiB, f.cached / MiB, f.peak_rss / MiB);
  }
  std::printf(
      "accounted: the row above summed, each kind at its own peak; buffers max: the most all\n"
      "  buffers held at one moment (lower: the kinds peak at different moments); cached: free\n"
      "  blocks kept for reuse (at most buffers max); peak RSS: getrusage (buffers, code, MPI)\n");
}

// Traffic in the papers' convention: the counted buffers (each call's whole buffer,
// core/stats.hpp) next to the formula.
inline void print_traffic(const RunReport& r, const TrainOptions& o) {
  const double MiB = 1024.0 * 1024.0;
  std::printf(
      "\ntraffic per step per rank, MiB of buffers (each call's whole buffer, as the papers\n"
      "count: an all-reduce of Ψ elements counts Ψ), measured by CommStats / formula\n"
      "(train/formulas.hpp)\n");
  const char* dp = o.mesh.cp > 1 ? "DPxCP reduction" : "DP reduction";
  std::printf("%5s %21s %21s %21s %21s\n", "rank", "TP all-reduce", "PP point-to-point", dp,
              "tied embedding");
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
  if (!r.ranks.empty())
    std::printf("b·s·h, the activation of one microbatch: %.1f KiB; m = %d microbatches\n",
                r.ranks[0].activation / 1024, o.microbatches);
}

// What the counted buffers put on the wire (core/stats.hpp's wire_bytes).
inline void print_wire(const RunReport& r, const TrainOptions& o) {
  const double MiB = 1024.0 * 1024.0;
  std::printf("\non the wire, MiB a rank sends per step (core/stats.hpp's wire_bytes)\n");
  std::printf("%5s %10s %10s %10s %10s\n", "rank", "TP", "PP", o.mesh.cp > 1 ? "DPxCP" : "DP",
              "tied emb");
  for (std::size_t k = 0; k < r.ranks.size(); ++k) {
    const Traffic& w = r.ranks[k].wire;
    std::printf("%5zu %10.3f %10.3f %10.3f %10.3f\n", k, w.tp / MiB, w.pp / MiB, w.dp / MiB,
                w.emb / MiB);
  }
  std::printf(
      "a buffer of B bytes over n ranks sends 2(n-1)/n B (all-reduce) or (n-1)/n B (reduce-\n"
      "  scatter, all-gather) with a ring or recursive halving and doubling (Thakur et al. 2005);\n"
      "  B on a point-to-point link\n");
}

}  // namespace report_detail

// The TP formula's form and inputs (train/formulas.hpp), from the model's declaration.
template <class M>
void print_tp_formula(const TrainOptions& o) {
  if constexpr (declares_tp_collectives<M>::value) {
    if (o.mesh.tp == 1) return;
    constexpr TpCollectives k = M::kTpCollectives;
    const int calls = tp_calls_per_layer<M>(o);
    std::printf(
        "TP formula: %d calls of b·s·h per layer and microbatch (kTpCollectives%s) x the\n"
        "  stage's layers x m%s\n%s",
        calls, o.recompute == Recompute::full ? ", recomputed" : "",
        k.vocab_parallel_ends ? ", + the embedding's and the head's b·s·h and the loss's 3·b·s"
                              : "",
        o.sequence_parallel ? "  under SP: each as an all-gather and a reduce-scatter of it\n"
                            : "");
  }
}

template <class M>
void print_report(const RunReport& r, const M& model, const TrainOptions& o) {
  report_detail::print_memory(r, o);
  report_detail::print_resident(r);
  report_detail::print_traffic(r, o);
  print_tp_formula<M>(o);
  report_detail::print_wire(r, o);
  if (o.mesh.cp > 1) print_context_parallel(r, o);
  if (o.mesh.pp > 1) {
    print_stage_balance(r, model, o);
    print_pipeline_bubble(r, o);
  }
}

}  // namespace trident
