// trident/train/formulas.hpp: what this rank's memory and traffic should be, from the papers'
// formulas (plan/formulas.hpp, each written once there) applied to this run's shapes — printed
// next to the measured figures, and asserted against CommStats and MemoryStats by the tests.
//
// Bytes follow CommStats' convention (core/stats.hpp): the whole logical buffer of each call.
#pragma once

#include <cstddef>

#include "../plan/formulas.hpp"
#include "trainer.hpp"

namespace trident {

struct Traffic {
  double tp = 0, pp = 0, dp = 0, emb = 0;  // bytes per step per axis, sent by this rank
};

struct ModelStates {
  double parameters = 0, gradients = 0, optimizer = 0;
  double total() const { return parameters + gradients + optimizer; }
};

// Psi of the ZeRO paper for this rank: elements of its model-parallel shard (units padded to a
// multiple of DP).
template <class M, class T, class S>
std::size_t local_parameters(Trainer<M, T, S>& t) {
  std::size_t psi = 0;
  for (int c = 0; c < t.chunks(); ++c)
    for (int u = 0; u < t.chunk(c).store().size(); ++u) psi += t.chunk(c).store().padded(u);
  return psi;
}

// ZeRO paper §5 (plan::model_state_bytes): per-rank model states with this rank's Psi and this
// run's byte sizes (plan::trident_precision: parameters and gradients in S, K in T).
template <class M, class T, class S>
ModelStates model_state_formula(Trainer<M, T, S>& t) {
  const plan::ModelStateBytes b =
      plan::model_state_bytes(double(local_parameters(t)), t.options().zero.stage,
                              t.mesh().shape().dp, plan::trident_precision<T, S>());
  return {b.params, b.grads, b.optimizer};
}

// Traffic of one step on each axis, for a decoder of model/decoder_stage.hpp's structure (a
// Megatron block per layer, an embedding, a head with the vocab-parallel cross-entropy).
//  TP (Megatron-LM §3, plan::tp_all_reduces_per_layer): per block and microbatch, 2 all-reduces
//    of b s h elements in forward and 2 in backward (sequence parallelism, Korthikanti et al. 2022
//    §4.2.2: an all-gather and a reduce-scatter of the same size instead); + 2 more per block with
//    recomputation; the embedding's g (forward) and the head's f (backward) each one b s h
//    all-reduce, under SP with the conjugate all-gather too; the vocab-parallel cross-entropy's
//    all-reduce of the row maxima (b s) and of the sums and target logits (2 b s); under SP one
//    all-reduce per step of the TP-replicated parameters' gradients.
//  PP: b s h (b s h / t under SP) per microbatch per stage boundary, forward and backward
//    (none when PP = 1: the virtual stages of one rank hand over in memory).
//  DP (ZeRO paper §7.2, plan::zero_dp_bytes): stage 0 all-reduce of Psi; 1: reduce-scatter +
//    all-gather of Psi; 2: reduce-scatter (per microbatch: m times) + all-gather;
//    3: reduce-scatter, and each unit gathered as often as the stage reads it (UnitLayout's
//    forward_reads, backward_reads: the embedding's backward needs no parameters; a tied unit
//    read by the embedding and the head of one stage is gathered twice).
//  emb: each tied parameter's gradient whose copies are on two ranks (the part this rank
//    holds), once per step.
template <class M, class T, class S>
Traffic traffic_formula(Trainer<M, T, S>& t) {
  const TrainOptions& o = t.options();
  const int m = o.microbatches, tpn = o.mesh.tp, p = o.mesh.pp, v = o.virtual_stages;
  const bool sp = o.sequence_parallel && tpn > 1;
  const double N = double(t.model().seq()) * o.rows_per_microbatch();
  // the (N, C) activation handed between stages: the chunks' (n, C) times TP under SP
  const double act = double(t.chunk(0).activation_size()) * (sp ? tpn : 1) * sizeof(T),
               rows = N * sizeof(T);
  Traffic f;
  for (int c = 0; c < t.chunks(); ++c) {
    const StageSpec& s = t.chunk(c).spec();
    UnitStore<T, S>& st = t.chunk(c).store();
    if (tpn > 1) {
      // an all-reduce counts its buffer once; its SP replacement, all-gather + reduce-scatter,
      // counts it twice (the same traffic in the paper's units: 2 b s h either way)
      const double op = (sp ? 2 : 1) * act;
      double per_mb = s.layers * plan::tp_all_reduces_per_layer(o.recompute) * op;
      if (s.first()) per_mb += op;
      if (s.last()) per_mb += op + 3 * rows;
      f.tp += m * per_mb;
      if (sp) {
        double replicated = 0;  // TP-replicated elements of the reduced gradients held here
        for (int u = 0; u < st.size(); ++u) {
          const std::size_t held = st.reduced_grads(u).size(),
                            begin = st.policy().stage == 0 ? 0 : st.shard_begin(u);
          for_each_param_in(st.layout(u), begin, begin + held,
                            [&](const LocalParam& lp, std::size_t a, std::size_t b) {
                              if (lp.tp_replicated()) replicated += double(b - a);
                            });
        }
        f.tp += replicated * sizeof(S);
      }
    }
    const int g = s.index;
    // stage boundaries cross ranks when PP > 1; with PP = 1 the chunks hand over in memory
    const double boundary = p == 1 ? 0 : (g > 0 ? 1 : 0) + (g < p * v - 1 ? 1 : 0);
    f.pp += m * boundary * act / (sp ? tpn : 1);
    const ZeroPolicy& z = o.zero;
    double psi = 0, fwd_gathers = 0, bwd_gathers = 0;
    for (int u = 0; u < st.size(); ++u) {
      const double bytes = double(st.padded(u)) * sizeof(S);
      psi += bytes;
      fwd_gathers += bytes * st.layout(u).forward_reads;
      bwd_gathers += bytes * st.layout(u).backward_reads;
    }
    if (o.mesh.dp > 1) {
      const double reductions = (z.stage >= 2 && z.reduce == GradReduce::per_microbatch) ? m : 1;
      const double gathered = z.keep_gathered ? psi : m * (fwd_gathers + bwd_gathers);
      f.dp += plan::zero_dp_bytes(z.stage, psi, psi, reductions, gathered).total();
    }
  }
  for (const LocalTie& tie : t.ties())
    if (!tie.on_this_rank() && (tie.chunk >= 0 || tie.other_chunk >= 0)) {
      const bool first = tie.chunk >= 0;
      UnitStore<T, S>& st = t.chunk(first ? tie.chunk : tie.other_chunk).store();
      f.emb += double(st.reduced_grads(first ? tie.unit : tie.other_unit).size()) * sizeof(S);
    }
  return f;
}

}  // namespace trident
