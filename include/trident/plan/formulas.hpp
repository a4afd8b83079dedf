// trident/plan/formulas.hpp: the papers' formulas for ZeRO, Megatron's tensor parallelism and
// the pipeline bubble, each written once. The planner (memory.hpp, communication.hpp,
// estimate.hpp), the run report (train/formulas.hpp, train/report.hpp), trident's cost model
// (costmodel/) and the tests call these functions; none writes a formula again.
//
// Bytes of collectives come in two conventions: a call's whole buffer (CommStats',
// core/stats.hpp: what train/ and costmodel/ count), and what one rank sends through a ring
// (ring_all_reduce_bytes, ring_gather_bytes: what the planner puts on a link).
#pragma once

#include <algorithm>

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
inline ModelStateBytes model_state_bytes(double psi, int zero, int nd, const Precision& p) {
  const auto share = [&](double bytes, bool partitioned) {
    return bytes * psi / (partitioned ? nd : 1);
  };
  return {share(p.param_bytes, zero >= 3), share(p.grad_bytes, zero >= 2),
          share(p.optimizer_bytes, zero >= 1)};
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
inline ZeroCallBytes zero_dp_bytes(int zero, double grads, double params, double reductions,
                                   double gathered) {
  if (zero == 0) return {grads, 0, 0};
  return {0, reductions * grads, zero == 3 ? gathered : params};
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

// --- the pipeline bubble -----------------------------------------------------------------

// Narayanan et al. 2021, §2.2.1 ("Efficient Large-Scale Language Model Training on GPU Clusters
// Using Megatron-LM"): a flush-based schedule (GPipe or 1F1B) idles (p-1) microbatch slots of
// every stage, a bubble of (p-1)/m of the ideal time; the interleaved schedule with v model
// chunks per rank shrinks it to (p-1)/(v m) (§2.2.2).
inline double bubble_fraction(int pp, int microbatches, int virtual_stages = 1) {
  return static_cast<double>(pp - 1) / (static_cast<double>(virtual_stages) * microbatches);
}

// The same bubble as a share of the step, idle over ideal + idle (GPipe, Huang et al. 2019):
// (p-1)/(v m + p-1).
inline double bubble_share(int pp, int microbatches, int virtual_stages = 1) {
  return static_cast<double>(pp - 1) /
         (static_cast<double>(virtual_stages) * microbatches + pp - 1);
}

// ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", §3.1) on equal stages: idle
// (p-1)(F + B - W) next to m (F + B + W) of work per stage; with equal F, B and W (the default)
// a share of (p-1)/(3m + p-1).
inline double zb_h1_bubble_share(int pp, int microbatches, double F = 1, double B = 1,
                                 double W = 1) {
  const double idle = (pp - 1) * (F + B - W);
  return idle / (microbatches * (F + B + W) + idle);
}

// ZB-V (pp/schedule_zbv.hpp) with equal F, B and W: Qi et al. 2024 give a bubble of 0; what
// no schedule can avoid is the last rank's wait for the first microbatch to go down p - 1
// chunks of half a stage, (p-1) F/2, and trident's ZB-V idles exactly max((p-1)/2, 2p-1-m) F
// per rank (the second term: too few microbatches to fill the V; the simulator's figure, checked
// for p <= 8, m <= 16 in tests/test_pp_zbv.cpp), next to 3 m F of work: a share of
// idle / (3m + idle).
inline double zbv_bubble_share(int pp, int microbatches) {
  const double idle = std::max((pp - 1) / 2.0, 2.0 * pp - 1 - microbatches);
  return idle / (3.0 * microbatches + idle);
}

}  // namespace trident::plan
