// trident/costmodel/predict.hpp: the cost model of one trident training step — what each pipeline
// stage's ranks hold (trident_memory.hpp), send per axis, and spend in time — on this machine,
// calibrated (calibrate.hpp), or on a datasheet cluster (machine.hpp).
//
// Bytes are counted call by call as trident makes the calls, in CommStats' convention (the
// whole buffer of a call, core/stats.hpp), as train/formulas.hpp counts them:
//   TP (Megatron-LM §3): per layer and microbatch 4 all-reduces of b s h (6 with full
//     recomputation), one for the embedding and one for the head, two of b s and 2 b s for the
//     loss; under SP (Korthikanti et al. 2022) the conjugates, and an all-reduce of the
//     TP-replicated gradients per step (counted here for an average DP shard);
//   PP (Narayanan et al. 2021 §4.1): b s h (b s h / t under SP) per microbatch per boundary;
//   CP (cp/ring_attention.hpp): per layer and microbatch cp - 1 blocks of K, V (2 b s h / (t cp))
//     forward, 2 (cp - 1) backward (K, V and dK, dV), cp - 1 more with full recomputation;
//   DP (ZeRO §7.2), over DP x CP, per unit: ZeRO-0 an all-reduce; 1 a reduce-scatter and an
//     all-gather; 2 the reduce-scatter per microbatch; 3 also the unit gathered before each forward
//     and backward;
//   emb: the tied word embedding's gradient between the first and last stage, once per step.
// Time: nothing overlaps, as in the planner's estimate(). A microbatch costs its linear layers'
// GEMM FLOPs (Narayanan et al. 2021 §5.1: 24 b s h^2 per layer forward, 2 b s h V for the head,
// the backward twice the forward) at the GEMM rate, its other kernels as measured, its buffers'
// zero-fill, and each call it waits for at latency + bytes / bandwidth. The pipeline runs m
// microbatches on the slowest stage plus each other stage's once to fill and drain (Huang et
// al. 2019; Narayanan et al. 2021 §2.2: (p - 1)/v stages' worth); then come the DP reductions
// and all-gathers, the tied embedding, the loss and norm all-reduces, and AdamW.
// CP: a rank computes its seq / cp tokens, and its attention 1/cp of the causal pairs (the zigzag
// split's balance; a cluster's prediction assumes it). On this machine the attention core is
// calibrated as the ring runs it, its transfers and the waits they leave included
// (calibrate.hpp); on a cluster the ring's bytes are priced at the link's rate, not overlapped.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "../nn/flops.hpp"
#include "../plan/communication.hpp"
#include "../plan/compute.hpp"
#include "../plan/formulas.hpp"
#include "machine.hpp"
#include "trident_memory.hpp"

namespace trident::costmodel {

// the paper planner's formulas, shapes and presets, which this model builds on
using namespace plan;

struct AxisFigures {
  double tp = 0, pp = 0, dp = 0, emb = 0, cp = 0;
  double total() const { return tp + pp + dp + emb + cp; }
};

// One rank of a pipeline stage.
struct StagePrediction {
  ModelStateBytes states;
  double activations = 0;   // peak bytes
  AxisFigures bytes;        // sent per step, CommStats' convention
  AxisFigures seconds;      // per step, all calls of the axis
  double flops = 0;         // GEMM FLOPs per step
  double compute_s = 0;     // GEMMs, other kernels and buffer fills per step
  double microbatch_s = 0;  // one microbatch through this stage's chunks, its calls included
  double after_s = 0;       // after the pipeline: DP reductions, embedding, loss/norm, AdamW
};

struct Prediction {
  std::vector<StagePrediction> stages;  // by pipeline stage
  double bubble_formula = 0;            // the schedule's bubble share (pp/schedule_traits.hpp)
  double pipeline_s = 0, after_s = 0, step_s = 0;
  CrossesNodes crosses;  // which axes' groups span nodes (cluster machines)
};

namespace detail {
// Bytes of one call of the TP all-reduce (b s h), of the loss's two (b s, 2 b s), of one
// pipeline message; and GEMM FLOPs and filled buffer bytes of one layer and of the head, all
// per microbatch on one rank.
struct MicrobatchWork {
  double act = 0, rows = 0, message = 0, kv_block = 0;  // kv_block: K, V of one ring step
  double layer_flops = 0, layer_linear_flops = 0, head_flops = 0, layer_fill = 0, head_fill = 0;
  double attention_share = 0;  // of a layer's FLOPs, in its attention half (nn/flops.hpp)
};

// Layers' worth of work in chunk k: its attention halves at their share, its MLP halves at the
// rest (whole layers count 1).
inline double layer_work(const ChunkUnits& k, const MicrobatchWork& w) {
  return k.attention * w.attention_share + k.mlp * (1 - w.attention_share);
}

inline MicrobatchWork microbatch_work(const gpt2::Options& o, const Precision& p) {
  const ActivationShape a = activation_shape(o);
  const double e = p.activation_bytes, tp = o.mesh.tp;
  MicrobatchWork w;
  w.act = a.N * a.C * e;
  w.rows = a.N * e;
  w.message = w.act / (o.sequence_parallel && tp > 1 ? tp : 1);
  w.kv_block = 2 * a.N * a.Cl * e;
  // Narayanan et al. 2021 §5.1, one TP and CP rank's share: forward, backward (twice),
  // recomputation
  const double passes = 3 + (o.recompute == Recompute::full ? 1 : 0);
  // selective recomputation: the attention core's forward again, 4 B s keys C / t (Q K^T, P V)
  const bool selective = o.recompute == Recompute::selective;
  w.layer_flops = passes * layer_forward_flops(model_spec(o.model), a.B) / (tp * o.mesh.cp) +
                  (selective ? 4 * a.B * a.seq * a.keys * a.C / tp : 0);
  w.layer_linear_flops = passes * 24 * a.N * a.C * a.C / tp;  // without attention's 4 B s^2 h
  w.head_flops = 3 * 2 * a.N * a.C * a.vocab_rows;
  w.attention_share = nn::gpt_attention_half_forward_flops(a.keys, a.C, 1) /
                      nn::gpt_layer_forward_flops(a.keys, a.C, 1);
  // models/gpt2/block.hpp's buffers: activations (twice with full recomputation; the
  // probabilities and attention's output again with selective) and temporaries
  const double temps = a.N * a.C + a.n * a.C + 8 * a.N * a.Cl + a.N * a.C + 2 * a.n * a.C;
  w.layer_fill = (layer_activation_elements(a) * (o.recompute == Recompute::full ? 2 : 1) +
                  (selective ? probability_elements(a) + a.N * a.Cl : 0) + temps) *
                 e;
  w.head_fill = (head_activation_elements(a) + 2 * a.N * a.C) * e;
  return w;
}

// One microbatch through chunk k, seconds of compute: its linear layers' GEMMs and the other
// kernels as measured, or (a cluster) all GEMM FLOPs at the GEMM rate; then its buffers' fill.
inline double chunk_compute_s(const ChunkUnits& k, const MicrobatchWork& w, const Machine& machine,
                              Recompute recompute) {
  double s = 0;
  const double layers = layer_work(k, w);  // a half layer at its FLOPs' share of each figure
  if (machine.layer_kernels_s > 0)
    s += (layers * w.layer_linear_flops + (k.head ? w.head_flops : 0)) / machine.gemm_flops +
         layers * machine.layer_kernels_s * (recompute == Recompute::full ? 4.0 / 3 : 1) +
         (k.head ? machine.head_kernels_s : 0);
  else
    s += (layers * w.layer_flops + (k.head ? w.head_flops : 0)) / machine.gemm_flops;
  if (machine.fill_bytes > 0)
    s += (layers * w.layer_fill + (k.head ? w.head_fill : 0)) / machine.fill_bytes;
  return s;
}

// TP of chunk k: Megatron's f and g per layer (plan::tp_all_reduces_per_layer), the embedding's
// g, the head's f and the loss's two all-reduces per microbatch, added to st; under SP the
// conjugates, and after the pipeline the all-reduce of the TP-replicated gradients (an average
// DP shard of them). Returns the seconds of one microbatch's calls.
inline double add_tp_calls(StagePrediction& st, const ChunkUnits& k, const gpt2::Options& o,
                           const Precision& p, const MicrobatchWork& w, const Machine& machine,
                           bool crosses) {
  const int tp = o.mesh.tp, m = o.microbatches;
  if (tp == 1) return 0;
  // per layer, half in each half (f and g of the attention, of the MLP)
  const double n = (k.attention + k.mlp) * plan::tp_all_reduces_per_layer(o.recompute) / 2 +
                   k.embedding + k.head;
  // under SP each all-reduce is an all-gather and a reduce-scatter, each counting the buffer
  double bytes = n * w.act * (o.sequence_parallel ? 2 : 1),
         sec = n * machine.seconds(CommOp::all_reduce, tp, w.act, crosses, true);
  if (k.head) {
    bytes += 3 * w.rows;
    sec += machine.seconds(CommOp::all_reduce, tp, w.rows, crosses, true) +
           machine.seconds(CommOp::all_reduce, tp, 2 * w.rows, crosses, true);
  }
  st.bytes.tp += m * bytes;
  st.seconds.tp += m * sec;
  if (o.sequence_parallel) {
    double replicated = 0;
    for (const UnitSize& u : k.units)
      replicated += u.name == "h"      ? 6.0 * o.model.hidden
                    : u.name == "wpe"  ? double(o.model.seq) * o.model.hidden
                    : u.name == "ln_f" ? 2.0 * o.model.hidden
                                       : 0.0;
    const double b = replicated / (o.zero.reduces_to_owners() ? zero_group(o) : 1) * p.grad_bytes;
    st.bytes.tp += b;
    st.after_s += machine.seconds(CommOp::all_reduce, tp, b, crosses);
  }
  return sec;
}

// PP of virtual stage g: a message each way per boundary per microbatch (ZB-V's turn, between
// two chunks of one rank, too: the executor sends it over the pipeline group), added to st.
// Returns the seconds of one microbatch's messages.
inline double add_pp_calls(StagePrediction& st, int g, const gpt2::Options& o,
                           const MicrobatchWork& w, const Machine& machine, bool crosses) {
  const double boundaries = (g > 0) + (g < o.mesh.pp * o.virtual_stages - 1);
  const double sec =
      boundaries > 0 ? boundaries * machine.seconds(CommOp::send, 2, w.message, crosses, true) : 0;
  st.bytes.pp += o.microbatches * boundaries * w.message;
  st.seconds.pp += o.microbatches * sec;
  return sec;
}

// CP of chunk k: its attention halves' ring steps per microbatch, added to st. Returns the seconds
// of one microbatch's steps: none on this machine, where the calibrated attention core holds
// them; on a cluster, their bytes at the link's rate.
inline double add_cp_calls(StagePrediction& st, const ChunkUnits& k, const gpt2::Options& o,
                           const MicrobatchWork& w, const Machine& machine, bool crosses) {
  if (o.mesh.cp == 1) return 0;
  const double passes = o.recompute == Recompute::full ? 4 : 3;  // forward, 2 backward, again
  const double bytes = k.attention * passes * (o.mesh.cp - 1) * w.kv_block;
  const double sec = machine.measured ? 0 : machine.seconds(CommOp::send, 2, bytes, crosses);
  st.bytes.cp += o.microbatches * bytes;
  st.seconds.cp += o.microbatches * sec;
  return sec;
}

// The DP calls of one stage's units: after the pipeline (started together) and per microbatch
// (ZeRO-2/3).
struct DpCalls {
  std::vector<double> reduce, publish, gather_fwd, gather_bwd, scatter;
};

// Unit u of chunk k on pipeline rank s: the tied embedding's gradient (PP > 1) or a split
// layer's (train/ties.hpp, sum_tied_gradients), and the unit's DP calls (ZeRO §7.2,
// plan::zero_dp_bytes: reductions once after the pipeline or per microbatch, ZeRO-3's gathers
// before each forward and backward that read it), their bytes added to st.
inline void add_unit_calls(StagePrediction& st, DpCalls& calls, const UnitSize& u,
                           const ChunkUnits& k, const gpt2::Options& o, const Precision& p,
                           const Machine& machine, bool pp_crosses, int s) {
  const ZeroPolicy& z = o.zero;
  const int dp = zero_group(o), m = o.microbatches;
  const double b = u.padded * p.param_bytes;
  const double held = u.padded / (z.reduces_to_owners() ? dp : 1) * p.grad_bytes;  // reduced
  const bool split = u.tied_rank >= 0 && u.tied_rank != s;  // the other copy on another rank
  const bool ends = std::min(s, u.tied_rank) == 0 && std::max(s, u.tied_rank) == o.mesh.pp - 1;
  const pp::ChunkMap map = o.chunk_map();
  const int last = o.mesh.pp * o.virtual_stages - 1;
  const bool wte_apart = u.name == "wte" && map.rank(0) != map.rank(last);  // not ZB-V's
  if ((o.mesh.pp > 1 && wte_apart) || (split && ends)) {
    // tied copies on the first and the last stage: summed over the embedding group
    st.bytes.emb += held;
    st.seconds.emb += machine.seconds(CommOp::all_reduce, 2, held, pp_crosses);
  } else if (split) {  // a layer split between neighbours: sent to the other, after the pipeline
    const double sec = machine.seconds(CommOp::send, 2, held, pp_crosses);
    st.bytes.pp += held;
    st.seconds.pp += sec;
    st.after_s += sec;
  }
  if (dp == 1) return;
  const bool per_mb = z.reduces_per_microbatch();
  (per_mb ? calls.scatter : calls.reduce).push_back(b);
  // a tied unit read by the embedding and the head of one chunk is gathered twice; the
  // embedding's backward reads no parameters
  const bool tied_here = u.name == "wte" && k.embedding && k.head;
  const bool embedding_only = k.embedding && (u.name == "wpe" || (u.name == "wte" && !k.head));
  const int fwd = tied_here ? 2 : 1, bwd = embedding_only ? 0 : 1;
  const bool gathers = z.gathers_per_microbatch();
  if (z.gathers_once_per_step()) calls.publish.push_back(b);
  if (gathers) {
    for (int n = 0; n < fwd; ++n) calls.gather_fwd.push_back(b);
    for (int n = 0; n < bwd; ++n) calls.gather_bwd.push_back(b);
  }
  st.bytes.dp +=
      plan::zero_dp_bytes(z, b, b, per_mb ? m : 1, gathers ? m * (fwd + bwd) * b : b).total();
}

// ZeRO-2/3's per-microbatch calls are started ahead of their use (the next unit's gather
// before this unit computes, each reduce-scatter as its unit's backward ends): per microbatch
// they pay their bytes and one latency per pass. Adds the stage's DP seconds to st and returns
// (one microbatch's, after the pipeline's).
inline std::pair<double, double> dp_seconds(StagePrediction& st, const DpCalls& calls,
                                            const gpt2::Options& o, const Machine& machine,
                                            bool crosses) {
  const int dp = zero_group(o);
  const double loop = machine.seconds(CommOp::all_gather, dp, calls.gather_fwd, crosses, true) +
                      machine.seconds(CommOp::all_gather, dp, calls.gather_bwd, crosses, true) +
                      machine.seconds(CommOp::reduce_scatter, dp, calls.scatter, crosses, true);
  const CommOp reduce = o.zero.reduces_to_owners() ? CommOp::reduce_scatter : CommOp::all_reduce;
  const double after = machine.seconds(reduce, dp, calls.reduce, crosses) +
                       machine.seconds(CommOp::all_gather, dp, calls.publish, crosses);
  st.seconds.dp += o.microbatches * loop + after;
  return {loop, after};
}

// Pipeline rank s: its memory, each chunk's compute and calls, its DP calls, and what follows
// the pipeline: DP, the tied embedding, the loss and the norm (one double each over the
// world), AdamW on the owned elements.
inline StagePrediction predict_stage(const gpt2::Options& o, const Precision& p,
                                     const Machine& machine, const MicrobatchWork& w, int s,
                                     const CrossesNodes& x) {
  const int m = o.microbatches, dp = zero_group(o);
  StagePrediction st;
  st.states = stage_model_states(o, s, p);
  st.activations = stage_activation_bytes(o, s, p);
  double calls_mb = 0, compute_mb = 0;  // per microbatch
  DpCalls calls;
  const std::vector<ChunkUnits> chunks = stage_chunks(o, s);
  for (int c = 0; c < static_cast<int>(chunks.size()); ++c) {
    const ChunkUnits& k = chunks[c];
    st.flops += m * (layer_work(k, w) * w.layer_flops + (k.head ? w.head_flops : 0));
    compute_mb += chunk_compute_s(k, w, machine, o.recompute);
    calls_mb += add_tp_calls(st, k, o, p, w, machine, x.tp);
    calls_mb += add_pp_calls(st, o.chunk_map().virtual_stage(c, s), o, w, machine, x.pp);
    calls_mb += add_cp_calls(st, k, o, w, machine, x.cp);
    for (const UnitSize& u : k.units) add_unit_calls(st, calls, u, k, o, p, machine, x.pp, s);
  }
  const auto [loop_dp, after_dp] = dp_seconds(st, calls, o, machine, x.dp);
  calls_mb += loop_dp;
  st.compute_s = m * compute_mb;
  st.microbatch_s = compute_mb + calls_mb;
  const double owned = stage_parameters(o, s) / (o.zero.shards_optimizer() ? dp : 1);
  st.after_s +=
      after_dp + st.seconds.emb +
      2 * machine.seconds(CommOp::all_reduce, o.mesh.product(), double(sizeof(double)), x.pp) +
      (machine.adamw_rate > 0 ? owned / machine.adamw_rate : 0);
  return st;
}
}  // namespace detail

// One step of run `o` on `machine`: each pipeline stage predicted, then the pipeline: m
// microbatches on the slowest stage plus the schedule's fill and drain, and the slowest stage's
// work after it. The fill and drain is the schedule's bubble over the ideal time (its traits,
// pp/bubble.hpp) on the other stages' mean microbatch: each other stage's microbatch once for a
// flush (Huang et al. 2019), 1/v of it interleaved, a third of it for ZB-H1 (F = B = W).
inline Prediction predict(const gpt2::Options& o, const Precision& p, const Machine& machine) {
  validate(o, o.mesh.product());
  const int m = o.microbatches, v = o.virtual_stages;
  Prediction r;
  if (!machine.measured) r.crosses = crosses_nodes(machine.cluster, plan_config(o));
  const detail::MicrobatchWork w = detail::microbatch_work(o, p);
  for (int s = 0; s < o.mesh.pp; ++s)
    r.stages.push_back(detail::predict_stage(o, p, machine, w, s, r.crosses));
  double slowest = 0, sum = 0;
  for (const StagePrediction& st : r.stages) {
    slowest = std::max(slowest, st.microbatch_s);
    sum += st.microbatch_s;
    r.after_s = std::max(r.after_s, st.after_s);
  }
  const pp::ScheduleTraits& schedule = pp::traits(o.schedule);
  const int others = o.mesh.pp - 1;
  const double fill =
      others ? (sum - slowest) / others * m * schedule.bubble_over_ideal(o.mesh.pp, m, v) : 0;
  r.pipeline_s = m * slowest + fill;
  r.step_s = r.pipeline_s + r.after_s;
  r.bubble_formula = schedule.bubble_share(o.mesh.pp, m, v);
  return r;
}

// The calls a run makes, as (operation, group size): inside its microbatch loop (TP, PP,
// ZeRO-2/3's per-microbatch reduce-scatters, ZeRO-3's gathers) and after it (the DP reductions
// and all-gathers, the tied embedding, the loss and norm over the world).
inline std::vector<std::pair<CommOp, int>> loop_calls(const gpt2::Options& o) {
  const MeshShape& s = o.mesh;
  const int dp = zero_group(o);
  std::vector<std::pair<CommOp, int>> calls;
  if (s.tp > 1) calls.push_back({CommOp::all_reduce, s.tp});
  if (s.pp > 1) calls.push_back({CommOp::send, 2});
  if (dp > 1 && o.zero.reduces_per_microbatch()) calls.push_back({CommOp::reduce_scatter, dp});
  if (dp > 1 && o.zero.gathers_per_microbatch()) calls.push_back({CommOp::all_gather, dp});
  return calls;
}
inline std::vector<std::pair<CommOp, int>> after_calls(const gpt2::Options& o) {
  const MeshShape& s = o.mesh;
  std::vector<std::pair<CommOp, int>> calls{{CommOp::all_reduce, s.product()}};
  if (s.pp > 1) calls.push_back({CommOp::all_reduce, 2});
  const std::vector<int> split = layer_split(o);  // a layer split between neighbours: a send
  if (s.pp > 2 && std::any_of(split.begin(), split.end(), [](int h) { return h % 2; }))
    calls.push_back({CommOp::send, 2});
  const int dp = zero_group(o);
  if (s.tp > 1 && o.sequence_parallel) calls.push_back({CommOp::all_reduce, s.tp});
  if (dp > 1 && o.zero.all_reduces_gradients()) calls.push_back({CommOp::all_reduce, dp});
  if (dp > 1 && o.zero.reduces_to_owners())
    calls.insert(calls.end(), {{CommOp::reduce_scatter, dp}, {CommOp::all_gather, dp}});
  return calls;
}

}  // namespace trident::costmodel
