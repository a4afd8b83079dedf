// trident/plan/communication.hpp: bytes each GPU sends per training step, per parallel axis,
// and which links carry them.
//
// Collectives are counted as rings: an all-reduce of n bytes over g ranks sends 2 (g-1)/g n
// bytes from each rank, a reduce-scatter or an all-gather (g-1)/g n. Ranks are placed as in
// Megatron-LM (and mesh/mesh.hpp): rank = tp + TP * (cp + CP * (dp + DP * pp)), so tensor
// parallelism is the fastest axis and fills a node first, context parallelism next. An axis whose
// group spans nodes runs at the inter-node bandwidth (its slowest link), otherwise at the
// intra-node bandwidth.
#pragma once

#include "cluster.hpp"
#include "config.hpp"
#include "formulas.hpp"
#include "model_spec.hpp"

namespace trident::plan {

// Tensor parallelism, per GPU per step: the all-reduces of the layers of this stage, for each
// microbatch (formulas.hpp's tp_all_reduces_per_layer). Sequence parallelism (Korthikanti §4.2.2)
// replaces each all-reduce by an all-gather and a reduce-scatter of the same bytes in all. The
// embedding's and the loss's collectives (one b s h and a few b s per microbatch) are left out:
// under 1/L of the total.
// b s h of one rank: its s / cp tokens of each sequence, in bytes.
inline double rank_activation_bytes(const ModelSpec& m, const Config& c, const Precision& p) {
  return static_cast<double>(c.microbatch_size) * m.seq / c.cp * m.hidden * p.activation_bytes;
}

inline double tp_bytes(const ModelSpec& m, const Config& c, const Precision& p) {
  if (c.tp == 1) return 0;
  const double activation = rank_activation_bytes(m, c, p);  // b s h
  const double layers = static_cast<double>(m.layers) / c.pp;
  return layers * c.microbatches * tp_all_reduces_per_layer(c.recompute) *
         ring_all_reduce_bytes(activation, c.tp);
}

// Pipeline parallelism, per GPU per step (Narayanan et al. 2021, §4.1): each microbatch sends
// its activation (b s h) forward and its gradient backward across each stage boundary; the
// interleaved schedule has v times the boundaries (§2.2.2). With TP each rank sends only its
// 1/t of the tensor (the scatter/gather optimisation, §4.1).
inline double pp_bytes(const ModelSpec& m, const Config& c, const Precision& p) {
  if (c.pp == 1) return 0;
  const double activation = rank_activation_bytes(m, c, p);
  return 2.0 * c.microbatches * c.virtual_stages * activation / c.tp;
}

// Context parallelism, per GPU per step (Liu et al. 2023, ring attention; cp/ring_attention.hpp):
// per layer and microbatch the keys and values of the rank's tokens, 2 b (s/cp) h / t, go round
// the ring: cp - 1 blocks forward, 2 (cp - 1) backward (K, V and dK, dV), and cp - 1 more when
// the attention is recomputed (full or selective).
inline double cp_bytes(const ModelSpec& m, const Config& c, const Precision& p) {
  if (c.cp == 1) return 0;
  const double block = 2 * rank_activation_bytes(m, c, p) / c.tp;
  const double passes = c.recompute == Recompute::none ? 3 : 4;
  const double layers = static_cast<double>(m.layers) / c.pp;
  return layers * c.microbatches * passes * (c.cp - 1) * block;
}

// Data parallelism, per GPU per step (ZeRO §7.2, formulas.hpp's zero_dp_bytes): stages 0-2 move
// 2 Psi (an all-reduce of the gradients, or a reduce-scatter of them and an all-gather of the
// updated parameters), stage 3 3 Psi (parameters all-gathered for the forward and again for the
// backward, gradients reduce-scattered); each pass a ring, (Nd-1)/Nd per byte. Psi is the
// model-parallel shard. The paper counts one microbatch; here gradients accumulate over the m
// microbatches at stages 0-1 and are reduced once, while stage 2 reduce-scatters them after
// each microbatch's backward (it keeps no full gradient) and stage 3 also re-gathers the
// parameters for each microbatch. The group is DP x CP: CP ranks hold the same parameters and
// sum their gradients with the DP ranks' (Megatron-Core's data-parallel-with-context group).
inline double dp_bytes(double psi, const Config& c, const Precision& p) {
  const int group = c.dp * c.cp;
  if (group == 1) return 0;
  const double m = c.microbatches, grads = psi * p.grad_bytes, params = psi * p.param_bytes;
  const ZeroPolicy zero = c.zero_policy();
  const ZeroCallBytes z =
      zero_dp_bytes(zero, grads, params, zero.reduces_per_microbatch() ? m : 1, 2 * m * params);
  return ring_all_reduce_bytes(z.all_reduce, group) +
         ring_gather_bytes(z.reduce_scatter + z.all_gather, group);
}

struct AxisBytes {
  double tp = 0, pp = 0, dp = 0, cp = 0;
};

inline AxisBytes comm_bytes(const ModelSpec& m, const Config& c, const Precision& p) {
  const double psi = static_cast<double>(shard_parameters(m, c.tp, c.pp));
  return {tp_bytes(m, c, p), pp_bytes(m, c, p), dp_bytes(psi, c, p), cp_bytes(m, c, p)};
}

// Which axes have a group with ranks on two nodes (dp: the DP x CP group of the reductions).
struct CrossesNodes {
  bool tp = false, pp = false, dp = false, cp = false;
};

// A group of `size` ranks `stride` apart starting at `first` spans nodes when its first and
// last rank sit on different ones.
inline bool spans_nodes(long long first, int size, long long stride, int gpus_per_node) {
  return first / gpus_per_node != (first + (size - 1) * stride) / gpus_per_node;
}

// Checks every group of every axis under rank = tp + TP * (cp + CP * (dp + DP * pp)): a TP
// group is TP neighbours, a CP group CP ranks TP apart, the DP x CP group DP*CP ranks TP apart,
// a PP group PP ranks TP*CP*DP apart.
inline CrossesNodes crosses_nodes(const ClusterSpec& cluster, const Config& c) {
  const int g = cluster.gpus_per_node;
  const long long T = c.tp, C = c.cp, D = c.dp, P = c.pp;
  CrossesNodes x;
  for (long long p = 0; p < P; ++p) {
    for (long long q = 0; q < C * D; ++q)
      x.tp = x.tp || spans_nodes(T * (q + C * D * p), c.tp, 1, g);
    for (long long t = 0; t < T; ++t) {
      x.dp = x.dp || spans_nodes(t + T * C * D * p, c.dp * c.cp, T, g);
      for (long long d = 0; d < D; ++d)
        x.cp = x.cp || spans_nodes(t + T * C * (d + D * p), c.cp, T, g);
    }
  }
  for (long long r = 0; r < T * C * D; ++r) x.pp = x.pp || spans_nodes(r, c.pp, T * C * D, g);
  return x;
}

inline double link_bandwidth(const ClusterSpec& cluster, bool spans) {
  return spans ? cluster.inter_node_bw : cluster.intra_node_bw;
}

}  // namespace trident::plan
