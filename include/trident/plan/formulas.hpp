// trident/plan/formulas.hpp: the papers' formulas for ZeRO and Megatron's tensor parallelism,
// each written once (the pipeline bubble's: pp/bubble.hpp, one per schedule's traits). The planner
// (memory.hpp, communication.hpp, estimate.hpp), the run report (train/formulas.hpp,
// train/report.hpp), trident's cost model (costmodel/) and the tests call these functions; none
// writes a formula again.
//
// Bytes of collectives come in two conventions: a call's whole buffer (CommStats',
// core/stats.hpp: what train/ and costmodel/ count), and what one rank sends through a ring
// (ring_all_reduce_bytes, ring_gather_bytes: what the planner puts on a link).
#pragma once

#include <algorithm>

#include "../zero/policy.hpp"
#include "cluster.hpp"
#include "recompute.hpp"

namespace trident::plan {

// --- ZeRO (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion
//     Parameter Models") ------------------------------------------------------------------

struct ModelStateBytes {
  double params = 0, grads = 0, optimizer = 0;
  double total() const { return params + grads + optimizer; }
};

// §5 and Figure 1, per GPU with Nd data-parallel ranks:
//   stage 0: (2 + 2 + K) Psi          stage 2: 2 Psi + (2 + K) Psi / Nd
//   stage 1: 4 Psi + K Psi / Nd       stage 3: (2 + 2 + K) Psi / Nd
// stage 1 partitions the optimizer states, 2 also the gradients, 3 also the parameters; the
// 2, 2, K are the bytes of a parameter, a gradient and the optimizer states of one parameter
// (p.param_bytes, p.grad_bytes, p.optimizer_bytes).
inline ModelStateBytes model_state_bytes(double psi, const ZeroPolicy& zero, int nd,
                                         const Precision& p) {
  const auto share = [&](double bytes, bool partitioned) {
    return bytes * psi / (partitioned ? nd : 1);
  };
  return {share(p.param_bytes, zero.shards_parameters()),
          share(p.grad_bytes, zero.shards_gradients()),
          share(p.optimizer_bytes, zero.shards_optimizer())};
}
// The same for a stage number, as the paper's tables give it.
inline ModelStateBytes model_state_bytes(double psi, int stage, int nd, const Precision& p) {
  return model_state_bytes(psi, ZeroPolicy{stage}, nd, p);
}

// ZeRO's 2, 2, K for trident computing in `compute_bytes` and storing parameters and gradients
// in `storage_bytes`: K = Adam's two moments (+ fp32 master weights when the two differ), so
// 2 + 2 + 12 for bf16 over float (the paper's mixed precision) and 4 + 4 + 8 for float.
inline Precision trident_precision(int compute_bytes, int storage_bytes) {
  const int k = (compute_bytes == storage_bytes ? 2 : 3) * compute_bytes;  // moments (+ master)
  return {"trident", double(storage_bytes), double(storage_bytes), double(k),
          double(compute_bytes)};
}
template <class T, class S>
Precision trident_precision() {
  return trident_precision(sizeof(T), sizeof(S));
}

// The data-parallel calls of one step, each counted with its whole buffer.
struct ZeroCallBytes {
  double all_reduce = 0, reduce_scatter = 0, all_gather = 0;
  double total() const { return all_reduce + reduce_scatter + all_gather; }
};

// §7.2: stage 0 all-reduces the gradients (Psi, 2 Psi through a ring); stages 1 and 2
// reduce-scatter them and all-gather the updated parameters (2 Psi); stage 3 reduce-scatters
// them and all-gathers the parameters before the forward and again before the backward (3 Psi).
// `grads` and `params` are Psi's gradients and parameters in bytes; `reductions` the
// reduce-scatters of the gradients per step (the paper's 1; m when stages 2-3 reduce after each
// microbatch's backward); `gathered` the bytes stage 3 all-gathers per step (the paper's
// 2 params; m times that when each microbatch gathers again, params when kept gathered).
inline ZeroCallBytes zero_dp_bytes(const ZeroPolicy& zero, double grads, double params,
                                   double reductions, double gathered) {
  if (zero.all_reduces_gradients()) return {grads, 0, 0};
  return {0, reductions * grads, zero.shards_parameters() ? gathered : params};
}

// --- Megatron-LM tensor parallelism (Shoeybi et al. 2019; Korthikanti et al. 2022) -------

// All-reduces of the activation (b s h) per transformer layer per microbatch (Shoeybi et al.
// 2019, §3): 2 in the forward (g after attention and after the MLP), 2 in the backward (f);
// full recomputation reruns the forward's 2 (Korthikanti et al. 2022, §5). Selective
// recomputation redoes only the attention core, between the collectives. Sequence parallelism
// (Korthikanti §4.2.2) replaces each by an all-gather and a reduce-scatter of the same bytes.
constexpr int tp_all_reduces_per_layer(Recompute r) {
  return r == Recompute::full ? 6 : 4;
}

// --- rings -------------------------------------------------------------------------------

// Bytes one rank sends in a ring all-reduce of `bytes` over `ranks`: 2 (g-1)/g n.
inline double ring_all_reduce_bytes(double bytes, int ranks) {
  return 2.0 * (ranks - 1) / ranks * bytes;
}

// Bytes one rank sends in a ring reduce-scatter or all-gather of `bytes` (the full buffer):
// (g-1)/g n.
inline double ring_gather_bytes(double bytes, int ranks) {
  return static_cast<double>(ranks - 1) / ranks * bytes;
}

}  // namespace trident::plan
