// trident/plan/config.hpp: one way to run a training step, and whether it is a valid one.
//
// A Config is a mesh (TP x PP x DP, and CP: each sequence split over CP ranks), a ZeRO stage, the
// microbatching of each data-parallel rank's share of the global batch (b sequences per microbatch,
// m microbatches), the pipeline schedule (GPipe, 1F1B, or interleaved 1F1B with v model chunks per
// pipeline rank), Megatron's sequence parallelism and activation recomputation. invalid_reason()
// says, in one sentence, why a Config cannot run a model on a cluster; it is empty for a valid one.
#pragma once

#include <string>

#include "../core/error.hpp"
#include "../pp/schedule.hpp"
#include "../zero/policy.hpp"
#include "cluster.hpp"
#include "model_spec.hpp"
#include "recompute.hpp"

namespace trident::plan {

// The schedule is the executor's pp::ScheduleKind (pp/schedule.hpp). GPipe (Huang et al.
// 2019): all forwards, then all backwards. 1F1B (PipeDream-Flush, Narayanan et al. 2021
// §2.2.1): the same bubble, at most p microbatches in flight; with v > 1 virtual stages, the
// interleaved schedule (§2.2.2). Each schedule's rules and bubble: its traits.

struct Config {
  int tp = 1, pp = 1, dp = 1;
  int zero = 0;             // ZeRO stage 0..3, over the DP group
  int microbatch_size = 1;  // b, sequences
  int microbatches = 1;     // m, per DP rank per step
  int virtual_stages = 1;   // v, model chunks per pipeline rank
  bool sequence_parallel = false;
  Recompute recompute = Recompute::none;
  pp::ScheduleKind schedule = pp::ScheduleKind::one_f_one_b;
  // context parallelism (cp/context_parallel.hpp): each sequence's tokens over cp ranks, the
  // zigzag split; the ranks of a CP group hold the same parameters (ZeRO over DP x CP)
  int cp = 1;

  int global_batch() const { return dp * microbatch_size * microbatches; }
  // The stage as the policy the trainer runs (its defaults: reduced and gathered per microbatch).
  ZeroPolicy zero_policy() const { return ZeroPolicy{zero}; }
  long long gpus() const { return static_cast<long long>(tp) * cp * pp * dp; }
};

// "mesh TP=8 x PP=16 x DP=64 = 8192 GPUs, not 128" (" x CP=n" when CP > 1)
inline std::string mesh_mismatch(int tp, int pp, int dp, int gpus, int cp = 1) {
  return "mesh TP=" + std::to_string(tp) + (cp != 1 ? " x CP=" + std::to_string(cp) : "") +
         " x PP=" + std::to_string(pp) + " x DP=" + std::to_string(dp) + " = " +
         std::to_string(static_cast<long long>(tp) * cp * pp * dp) + " GPUs, not " +
         std::to_string(gpus);
}

// Why `c` cannot train `m` on `cluster`, or "" when it can.
inline std::string invalid_reason(const ModelSpec& m, const ClusterSpec& cluster, const Config& c) {
  const auto n = [](long long x) { return std::to_string(x); };
  if (c.tp < 1 || c.pp < 1 || c.dp < 1 || c.cp < 1 || c.microbatch_size < 1 || c.microbatches < 1 ||
      c.virtual_stages < 1)
    return "TP, CP, PP, DP, microbatch size, microbatches and virtual stages must be at least 1";
  if (!c.zero_policy().valid()) return "ZeRO stage " + n(c.zero) + " is not one of 0, 1, 2, 3";
  if (c.gpus() != cluster.gpus) return mesh_mismatch(c.tp, c.pp, c.dp, cluster.gpus, c.cp);
  // the zigzag split: chunks r and 2cp-1-r of 2cp on rank r (cp/context_parallel.hpp)
  if (c.cp > 1 && m.seq % (2 * c.cp) != 0)
    return "CP=" + n(c.cp) + " does not split the sequence of " + n(m.seq) + " tokens into " +
           n(2 * c.cp) + " chunks (zigzag: 2 per rank)";
  // Megatron-LM §3: each TP rank holds whole attention heads and 1/t of the hidden columns.
  if (m.heads % c.tp != 0) return "TP=" + n(c.tp) + " does not divide " + n(m.heads) + " heads";
  if (m.hidden % c.tp != 0)
    return "TP=" + n(c.tp) + " does not divide the hidden size " + n(m.hidden);
  if (c.sequence_parallel && (m.seq / c.cp) % c.tp != 0)
    return "sequence parallelism: TP=" + n(c.tp) + " does not divide the sequence " +
           n(m.seq / c.cp) + (c.cp > 1 ? " (of each CP rank)" : "");
  if (m.layers % (c.pp * c.virtual_stages) != 0)
    return "PP=" + n(c.pp) + " x virtual stages " + n(c.virtual_stages) + " does not divide " +
           n(m.layers) + " layers";
  if (c.virtual_stages > 1 && c.pp == 1) return "virtual stages need a pipeline (PP > 1)";
  try {  // the schedule's own rules (pp/schedule_traits.hpp)
    if (c.pp > 1) pp::validate({c.schedule, c.pp, c.microbatches, c.virtual_stages});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline void validate(const ModelSpec& m, const ClusterSpec& cluster, const Config& c) {
  const std::string reason = invalid_reason(m, cluster, c);
  if (!reason.empty()) fail(reason);
}

}  // namespace trident::plan
