// trident/train/formulas.hpp: what this rank's memory and traffic should be, from the papers'
// formulas (plan/formulas.hpp, each written once there) applied to this run's shapes — printed
// next to the measured figures, and asserted against CommStats and MemoryStats by the tests.
//
// Bytes follow CommStats' convention (core/stats.hpp): the whole logical buffer of each call.
#pragma once

#include <cmath>
#include <cstddef>

#include "../plan/formulas.hpp"
#include "trainer.hpp"

namespace trident {

struct Traffic {
  double tp = 0, pp = 0, dp = 0, emb = 0;  // bytes per step per axis, sent by this rank
  double cp = 0;                           // the context-parallel ring's
};

struct ModelStates {
  double parameters = 0, gradients = 0, optimizer = 0;
  double total() const { return parameters + gradients + optimizer; }
};

// Psi of the ZeRO paper for this rank: elements of its model-parallel shard (units padded to a
// multiple of DP).
template <class M, class T, class S, class B>
std::size_t local_parameters(Trainer<M, T, S, B>& t) {
  std::size_t psi = 0;
  for (int c = 0; c < t.chunks(); ++c)
    for (int u = 0; u < t.chunk(c).store().size(); ++u) psi += t.chunk(c).store().padded(u);
  return psi;
}

// ZeRO paper §5 (plan::model_state_bytes): per-rank model states with this rank's Psi and this
// run's byte sizes (plan::trident_precision: parameters and gradients in S, K in T).
template <class M, class T, class S, class B>
ModelStates model_state_formula(Trainer<M, T, S, B>& t) {
  const plan::ModelStateBytes b =
      plan::model_state_bytes(double(local_parameters(t)), t.options().zero,
                              t.mesh().dp_cp().size(), plan::trident_precision<T, S>());
  return {b.params, b.grads, b.optimizer};
}

// TP's all-reduces of b·s·h per layer and microbatch that model M declares (kTpCollectives),
// with full recomputation's; -1 where M declares none.
template <class M>
int tp_calls_per_layer(const TrainOptions& o) {
  if constexpr (declares_tp_collectives<M>::value) {
    constexpr TpCollectives k = M::kTpCollectives;
    return k.per_layer + (o.recompute == Recompute::full ? k.recomputed : 0);
  } else {
    return -1;
  }
}

namespace traffic_detail {

// The (N, C) activation handed between stages, bytes: the chunks' (n, C) times TP under SP.
template <class M, class T, class S, class B>
double activation_bytes(Trainer<M, T, S, B>& t) {
  const TrainOptions& o = t.options();
  const bool sp = o.sequence_parallel && o.mesh.tp > 1;
  return double(t.chunk(0).activation_size()) * (sp ? o.mesh.tp : 1) * sizeof(T);
}

// TP bytes of chunk c per step, from the model's declared collectives (model/model.hpp); NaN
// (printed "not declared") for a model that declares none.
template <class M, class T, class S, class B>
double chunk_tp_bytes(Trainer<M, T, S, B>& t, int c) {
  const TrainOptions& o = t.options();
  const int tpn = o.mesh.tp;
  if (tpn == 1) return 0;
  if constexpr (!declares_tp_collectives<M>::value) return std::nan("");
  constexpr TpCollectives k =
      declares_tp_collectives<M>::value ? M::kTpCollectives : TpCollectives{};
  const bool sp = o.sequence_parallel;
  const double rows = double(t.model().seq()) / o.mesh.cp * o.rows_per_microbatch() * sizeof(T);
  const StageSpec& s = t.chunk(c).spec();
  // an all-reduce counts its buffer once; its SP replacement, all-gather + reduce-scatter,
  // counts it twice (the same traffic in the paper's units: 2 b s h either way)
  const double op = (sp ? 2 : 1) * activation_bytes(t);
  const int halves = 2 * s.layers - s.from_second_half - s.to_first_half;  // half of each in each
  const int per_layer = tp_calls_per_layer<M>(o);
  double per_mb = halves * per_layer * op / 2;
  if (s.first() && k.vocab_parallel_ends) per_mb += op;
  if (s.last() && k.vocab_parallel_ends) per_mb += op + 3 * rows;
  double bytes = o.microbatches * per_mb;
  if (sp) {
    UnitStore<T, S, B>& st = t.chunk(c).store();
    double replicated = 0;  // TP-replicated elements of the reduced gradients held here
    for (int u = 0; u < st.size(); ++u) {
      const std::size_t held = st.reduced_grads(u).size(), begin = st.owned_begin(u);
      for_each_param_in(st.layout(u), begin, begin + held,
                        [&](const LocalParam& lp, std::size_t a, std::size_t b) {
                          if (lp.tp_replicated()) replicated += double(b - a);
                        });
    }
    bytes += replicated * sizeof(S);
  }
  return bytes;
}

// PP bytes of chunk c per step: stage boundaries cross ranks when PP > 1; with PP = 1 the
// chunks hand over in memory.
template <class M, class T, class S, class B>
double chunk_pp_bytes(Trainer<M, T, S, B>& t, int c) {
  const TrainOptions& o = t.options();
  const int p = o.mesh.pp, v = o.virtual_stages, g = t.chunk(c).spec().index;
  const bool sp = o.sequence_parallel && o.mesh.tp > 1;
  const double boundary = p == 1 ? 0 : (g > 0 ? 1 : 0) + (g < p * v - 1 ? 1 : 0);
  return o.microbatches * boundary * activation_bytes(t) / (sp ? o.mesh.tp : 1);
}

// CP bytes of chunk c per step (cp/ring_attention.hpp): per layer's attention and microbatch,
// cp - 1 blocks of K, V forward (again with full recomputation) and 2 (cp - 1) backward (K, V
// and their gradients), a block being the stage's ring_block_size() elements.
template <class M, class T, class S, class B>
double chunk_cp_bytes(Trainer<M, T, S, B>& t, int c) {
  const TrainOptions& o = t.options();
  if constexpr (supports_context_parallel<M>::value) {
    if (o.mesh.cp == 1) return 0;
    const StageSpec& s = t.chunk(c).spec();
    int attention = 0;  // layers whose attention half runs here
    for (int l = 0; l < s.layers; ++l) attention += nn::runs_attention(s.halves(l));
    const double passes = o.recompute == Recompute::full ? 4 : 3;
    return o.microbatches * attention * passes * (o.mesh.cp - 1) *
           double(t.chunk(c).ring_block_size()) * sizeof(T);
  }
  return 0;
}

// DP bytes of chunk c per step (plan::zero_dp_bytes on its units), over DP x CP.
template <class M, class T, class S, class B>
double chunk_dp_bytes(Trainer<M, T, S, B>& t, int c) {
  const TrainOptions& o = t.options();
  if (o.mesh.dp * o.mesh.cp == 1) return 0;
  const int m = o.microbatches;
  const ZeroPolicy& z = o.zero;
  UnitStore<T, S, B>& st = t.chunk(c).store();
  double psi = 0, fwd_gathers = 0, bwd_gathers = 0;
  for (int u = 0; u < st.size(); ++u) {
    const double bytes = double(st.padded(u)) * sizeof(S);
    psi += bytes;
    fwd_gathers += bytes * st.layout(u).forward_reads;
    bwd_gathers += bytes * st.layout(u).backward_reads;
  }
  const double reductions = z.reduces_per_microbatch() ? m : 1;
  const double gathered = z.gathers_per_microbatch() ? m * (fwd_gathers + bwd_gathers) : psi;
  return plan::zero_dp_bytes(z, psi, psi, reductions, gathered).total();
}

}  // namespace traffic_detail

// Traffic of one step on each axis, for a decoder of model/decoder_stage.hpp's structure.
//  TP: as the model declares (model/model.hpp, kTpCollectives; not declared: NaN). For Megatron's
//    block (Megatron-LM §3, plan::tp_all_reduces_per_layer): per block and microbatch, 2
//    all-reduces of b s h elements in forward and 2 in backward (sequence parallelism, Korthikanti
//    et al. 2022 §4.2.2: an all-gather and a reduce-scatter of the same size instead); + 2 more per
//    block with recomputation; the embedding's g (forward) and the head's f (backward) each one b s
//    h all-reduce, under SP with the conjugate all-gather too; the vocab-parallel cross-entropy's
//    all-reduce of the row maxima (b s) and of the sums and target logits (2 b s); under SP one
//    all-reduce per step of the TP-replicated parameters' gradients.
//  PP: b s h (b s h / t under SP) per microbatch per stage boundary, forward and backward
//    (none when PP = 1: the virtual stages of one rank hand over in memory).
//  CP (cp/ring_attention.hpp): per layer and microbatch cp - 1 K, V blocks forward, 2 (cp - 1)
//    blocks backward (K, V and dK, dV); + cp - 1 with full recomputation.
//  DP (ZeRO paper §7.2, plan::zero_dp_bytes; over the DP x CP group): stage 0 all-reduce of
//    Psi; 1: reduce-scatter + all-gather of Psi; 2: reduce-scatter (per microbatch: m times)
//    + all-gather; 3: reduce-scatter, and each unit gathered as often as the stage reads it
//    (UnitLayout's forward_reads, backward_reads: the embedding's backward needs no
//    parameters; a tied unit read by the embedding and the head of one stage is gathered
//    twice).
//  emb: each tied parameter's gradient whose copies are on the first and the last pipeline rank
//    (the part this rank holds), once per step; a layer split between neighbouring ranks sends
//    its copy's over PP instead (train/ties.hpp, sum_tied_gradients).
//  A stage boundary inside a layer: each half has half the layer's TP calls.
template <class M, class T, class S, class B>
Traffic traffic_formula(Trainer<M, T, S, B>& t) {
  Traffic f;
  for (int c = 0; c < t.chunks(); ++c) {
    f.tp += traffic_detail::chunk_tp_bytes(t, c);
    f.pp += traffic_detail::chunk_pp_bytes(t, c);
    f.dp += traffic_detail::chunk_dp_bytes(t, c);
    f.cp += traffic_detail::chunk_cp_bytes(t, c);
  }
  for (const LocalTie& tie : t.ties())
    if (tie.peer >= 0) {
      const bool first = tie.chunk >= 0;
      UnitStore<T, S, B>& st = t.chunk(first ? tie.chunk : tie.other_chunk).store();
      const double b =
          double(st.reduced_grads(first ? tie.unit : tie.other_unit).size()) * sizeof(S);
      (tie.over_embedding_group ? f.emb : f.pp) += b;
    }
  return f;
}

// The model's declared activations of one layer and microbatch, bytes (model/model.hpp's
// layer_activation_elements at this run's shapes); NaN (printed "not declared") without one.
template <class M, class T, class S, class B>
double layer_activation_formula(Trainer<M, T, S, B>& t) {
  if constexpr (declares_activation_formula<M>::value) {
    const TrainOptions& o = t.options();
    const ModelRun run{o.mesh.tp, o.sequence_parallel, o.rows_per_microbatch(), o.mesh.cp,
                       o.recompute};
    return t.model().layer_activation_elements(run) * sizeof(T);
  } else {
    return std::nan("");
  }
}

}  // namespace trident
