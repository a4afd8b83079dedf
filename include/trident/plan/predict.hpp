// trident/plan/predict.hpp: the cost model of one trident training step — what each pipeline
// stage's ranks hold (trident_memory.hpp), send per axis, and spend in time — on a measured
// machine (calibrate.hpp) or a datasheet cluster (cluster.hpp).
//
// Traffic is counted call by call as trident makes the calls, in CommStats' convention (the
// whole buffer of each call; core/stats.hpp), with the formulas of train/formulas.hpp:
//   TP (Megatron-LM §3): per layer and microbatch 4 all-reduces of b s h (+2 with full
//      recomputation), the embedding's and the head's one each, the loss's two of b s and 2 b s;
//   PP (Narayanan et al. 2021 §4.1): b s h each way per microbatch per stage boundary (/t under SP);
//   DP (ZeRO §7.2): per unit, stage 0 an all-reduce; 1 a reduce-scatter + an all-gather; 2 the
//      reduce-scatter per microbatch; 3 also the unit gathered before each forward and backward;
//   emb: the tied word embedding's gradient between the first and last stage, once per step.
// Time: nothing overlaps, as in the planner's estimate(). A rank's microbatch costs its GEMM
// FLOPs (Narayanan et al. 2021 §5.1: 24 b s h^2 + 4 b s^2 h per layer forward, 2 b s h V for
// the head, backward twice the forward) at the GEMM rate, its buffers' zero-fill, and each
// call inside it (TP; ZeRO-2/3's per-microbatch reduce-scatters and ZeRO-3's gathers; its
// pipeline messages) at latency + bytes / bandwidth. The pipeline runs m microbatches on the
// slowest stage plus the others' once to fill and drain, (p - 1)/v stages' worth (Huang et
// al. 2019; Narayanan et al. 2021 §2.2); then the DP reductions, the tied embedding, the loss
// and norm all-reduces and AdamW on the owned elements.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "calibrate.hpp"
#include "communication.hpp"
#include "compute.hpp"
#include "trident_memory.hpp"

namespace trident::plan {

// What the step time is computed on: measured rates and fits, or a cluster's datasheet.
struct Machine {
  std::string name;
  double gemm_flops = 0;  // per rank
  double fill_bytes = 0;  // zero-filled buffers, bytes/s (0: free)
  double adamw_rate = 0;  // element updates/s (0: free)
  std::optional<Calibration> measured;
  ClusterSpec cluster;  // links, when not measured

  // Seconds of one call moving `bytes` (CommStats' convention) over `group` ranks.
  double seconds(CommOp op, int group, double bytes, bool crosses_nodes) const {
    if (group < 2 || bytes <= 0) return 0;
    if (measured) {
      if (op == CommOp::send) return measured->p2p.seconds(bytes);
      return measured->collective(op, group).seconds(bytes);
    }
    const double bw = link_bandwidth(cluster, crosses_nodes);
    if (op == CommOp::send) return bytes / bw;
    if (op == CommOp::all_reduce) return ring_all_reduce_bytes(bytes, group) / bw;
    return ring_gather_bytes(bytes, group) / bw;  // reduce-scatter, all-gather
  }
};

inline Machine measured_machine(const Calibration& c) {
  Machine m{"this machine (measured, " + std::to_string(c.ranks) + " ranks at once)"};
  m.gemm_flops = c.gemm_flops, m.fill_bytes = c.fill_bytes, m.adamw_rate = c.adamw_rate;
  m.measured = c;
  return m;
}

// GEMMs at peak x efficiency; buffer fills and AdamW not counted (fused, next to the GEMMs).
inline Machine cluster_machine(const ClusterSpec& c, std::string name) {
  Machine m{std::move(name)};
  m.gemm_flops = c.peak_flops * c.efficiency;
  m.cluster = c;
  return m;
}

struct AxisFigures {
  double tp = 0, pp = 0, dp = 0, emb = 0;
  double total() const { return tp + pp + dp + emb; }
};

// One rank of a pipeline stage.
struct StagePrediction {
  ModelStateBytes states;
  double activations = 0;  // peak bytes
  AxisFigures bytes;       // sent per step, CommStats' convention
  AxisFigures seconds;     // per step, all calls of the axis
  double flops = 0;        // GEMM FLOPs per step
  double compute_s = 0;    // GEMMs and buffer fills per step
  double microbatch_s = 0; // one microbatch through this stage's chunks, its calls included
  double after_s = 0;      // after the pipeline: DP reductions, embedding, loss/norm, AdamW
};

struct Prediction {
  std::vector<StagePrediction> stages;  // by pipeline stage
  double bubble_formula = 0;            // (p-1)/(v m + p-1), Huang et al. 2019
  double pipeline_s = 0, after_s = 0, step_s = 0;
  CrossesNodes crosses;  // which axes' groups span nodes (cluster machines)
};

inline Prediction predict(const TrainOptions& o, const Precision& p, const Machine& machine) {
  validate(o, o.mesh.product());
  const int tp = o.mesh.tp, pp_size = o.mesh.pp, dp = o.mesh.dp, v = o.virtual_stages;
  const int m = o.microbatches;
  const bool sp = o.sequence_parallel && tp > 1;
  const ActivationShape a = activation_shape(o);
  const ModelSpec spec = model_spec(o.model);
  const double act = a.N * a.C * p.activation_bytes, rows = a.N * p.activation_bytes;
  const ZeroPolicy& z = o.zero;
  Prediction r;
  if (!machine.measured) {
    Config c;
    c.tp = tp, c.pp = pp_size, c.dp = dp;
    r.crosses = crosses_nodes(machine.cluster, c);
  }
  auto time = [&](CommOp op, int group, double bytes, bool crosses) {
    return machine.seconds(op, group, bytes, crosses);
  };
  // per microbatch: one layer's GEMM FLOPs (forward, backward, recomputed forward) and bytes
  // of buffers it fills (activations and the temporaries of model/block.hpp)
  const double layer_fwd = layer_forward_flops(spec, a.B) / tp;
  const double layer_flops = (3 + (o.recompute ? 1 : 0)) * layer_fwd;
  const double head_flops = 3 * 2 * a.N * a.C * a.vocab_rows;
  const double layer_temps = a.N * a.C + a.n * a.C +                                // forward
                             8 * a.N * a.Cl + a.N * a.C + 2 * a.n * a.C;           // backward
  const double layer_fill = (layer_activation_elements(a) * (o.recompute ? 2 : 1) + layer_temps) *
                            p.activation_bytes;
  const double head_fill = (head_activation_elements(a) + 2 * a.N * a.C) * p.activation_bytes;

  for (int s = 0; s < pp_size; ++s) {
    StagePrediction st;
    st.states = stage_model_states(o, s, p);
    st.activations = stage_activation_bytes(o, s, p);
    double loop_s = 0, compute_mb = 0;  // per microbatch
    const std::vector<ChunkUnits> chunks = stage_chunks(o, s);
    for (int c = 0; c < static_cast<int>(chunks.size()); ++c) {
      const ChunkUnits& k = chunks[c];
      // compute
      const double flops = k.layers * layer_flops + (k.head ? head_flops : 0);
      const double fill = k.layers * layer_fill + (k.head ? head_fill : 0);
      st.flops += m * flops;
      compute_mb += flops / machine.gemm_flops + (machine.fill_bytes > 0 ? fill / machine.fill_bytes : 0);
      // TP: the calls of one microbatch
      if (tp > 1) {
        const double calls = k.layers * (4 + (o.recompute ? 2 : 0)) + (k.embedding ? 1 : 0) + (k.head ? 1 : 0);
        double bytes = calls * act, seconds = calls * time(CommOp::all_reduce, tp, act, r.crosses.tp);
        if (sp) bytes += (k.embedding ? act : 0) + (k.head ? act : 0);
        if (k.head) {
          bytes += 3 * rows;
          seconds += time(CommOp::all_reduce, tp, rows, r.crosses.tp) +
                     time(CommOp::all_reduce, tp, 2 * rows, r.crosses.tp);
        }
        st.bytes.tp += m * bytes;
        st.seconds.tp += m * seconds;
        loop_s += seconds;
      }
      // PP: one message per boundary each way per microbatch; this rank sends one per boundary
      const int g = c * pp_size + s;
      const double boundaries = (g > 0 ? 1 : 0) + (g < pp_size * v - 1 ? 1 : 0);
      const double message = act / (sp ? tp : 1);
      st.bytes.pp += m * boundaries * message;
      const double pp_s = boundaries * time(CommOp::send, 2, message, r.crosses.pp);
      st.seconds.pp += m * pp_s;
      loop_s += pp_s;
      // DP: ZeRO's calls, per unit
      if (dp > 1) {
        const bool per_mb = z.stage >= 2 && z.reduce == GradReduce::per_microbatch;
        double loop_dp = 0, after_dp = 0, bytes = 0;
        for (const UnitSize& u : k.units) {
          const double b = u.padded * p.param_bytes;
          const double rs = time(CommOp::reduce_scatter, dp, b, r.crosses.dp);
          const double ag = time(CommOp::all_gather, dp, b, r.crosses.dp);
          if (z.stage == 0) after_dp += time(CommOp::all_reduce, dp, b, r.crosses.dp), bytes += b;
          if (z.stage >= 1) {
            (per_mb ? loop_dp : after_dp) += rs;
            bytes += (per_mb ? m : 1) * b;
          }
          if (z.stage == 1 || z.stage == 2) after_dp += ag, bytes += b;
          if (z.stage == 3) {
            const bool tied_here = u.name == "wte" && k.embedding && k.head;
            const bool embedding_only = k.embedding && (u.name == "wpe" || (u.name == "wte" && !k.head));
            const double gathers = (tied_here ? 2 : 1) + (embedding_only ? 0 : 1);
            if (z.keep_gathered) {
              after_dp += ag, bytes += b;
            } else {
              loop_dp += gathers * ag, bytes += m * gathers * b;
            }
          }
        }
        st.bytes.dp += bytes;
        st.seconds.dp += m * loop_dp + after_dp;
        loop_s += loop_dp;
        st.after_s += after_dp;
      }
      // the tied embedding's gradient (the part this rank holds), first and last stage
      for (const UnitSize& u : k.units)
        if (pp_size > 1 && u.name == "wte") {
          const double held = u.padded / (z.stage == 0 ? 1 : dp) * p.grad_bytes;
          st.bytes.emb += held;
          st.seconds.emb += time(CommOp::all_reduce, 2, held, r.crosses.pp);
        }
    }
    st.after_s += st.seconds.emb;
    // loss and gradient norm: two all-reduces of one double over the world
    st.after_s += 2 * time(CommOp::all_reduce, o.mesh.product(), sizeof(double), r.crosses.pp);
    const double owned = stage_parameters(o, s) / (z.stage >= 1 ? dp : 1);
    if (machine.adamw_rate > 0) st.after_s += owned / machine.adamw_rate;
    st.microbatch_s = compute_mb + loop_s;
    st.compute_s = m * compute_mb;
    r.stages.push_back(st);
  }
  double slowest = 0, sum = 0;
  for (const StagePrediction& st : r.stages) {
    slowest = std::max(slowest, st.microbatch_s);
    sum += st.microbatch_s;
    r.after_s = std::max(r.after_s, st.after_s);
  }
  r.pipeline_s = m * slowest + (sum - slowest) / v;
  r.step_s = r.pipeline_s + r.after_s;
  r.bubble_formula = double(pp_size - 1) / (double(v) * m + pp_size - 1);
  return r;
}

}  // namespace trident::plan
