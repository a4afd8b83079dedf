// trident/zero/policy.hpp: the ZeRO stages (Rajbhandari et al. 2020) as one parameterised policy.
//
//   Zero<0>  plain data parallelism: every rank holds all model states; gradients all-reduced
//   Zero<1>  P_os:  optimizer states sharded over DP; gradients reduced to their owners
//            (reduce-scatter), updated parameters all-gathered
//   Zero<2>  P_os+g: gradients sharded too; each unit's gradient is reduce-scattered as soon as
//            its backward is done and the full copy is freed
//   Zero<3>  P_os+g+p: parameters sharded too; a unit is all-gathered just before its forward
//            and again before its backward (the next unit prefetched), and freed after use
//
// With several microbatches per step (gradient accumulation, pipeline schedules):
//  - stages 0 and 1 reduce once per step, after each unit's last backward (the paper's 2 Psi);
//  - stages 2 and 3 reduce per microbatch by default (GradReduce::per_microbatch), as DeepSpeed
//    does: gradient memory stays Psi/Nd but the reduce-scatter volume is m Psi per step.
//    GradReduce::per_step keeps a full gradient for the step and reduces once (Psi per step,
//    the memory of stage 1);
//  - stage 3 gathers parameters for every microbatch's forward and backward (2 m Psi per step)
//    unless keep_gathered keeps each unit gathered for the rest of the step (Psi per step,
//    the parameter memory of stage 2).
// When the full-gradient reductions (stages 0 and 1, and 2-3 per step) run, GradOverlap:
//  - overlapped: each unit's reduction is launched, nonblocking, when its last backward is
//    done, and overlaps the backward of the units before it (MPI's nonblocking collectives,
//    which progress inside the MPI calls the backward makes);
//  - at_end: all of them after the backward, blocking, so that they take the shared-memory
//    path (core/comm.hpp) when the DP group is on one node;
//  - automatic: at_end when the DP group shares one node's memory, else overlapped. On a CPU
//    node every core computes the backward, so there is nothing to overlap with, and the
//    shared-memory path moves the same bytes faster than MPI's (bench_zero's overlap table).
// Megatron-LM's --overlap-grad-reduce, DeepSpeed's overlap_comm.
#pragma once

#include <string>

#include "../core/error.hpp"

namespace trident {

enum class GradReduce { per_microbatch, per_step };
enum class GradOverlap { automatic, overlapped, at_end };

struct ZeroPolicy {
  int stage = 0;
  GradReduce reduce = GradReduce::per_microbatch;  // stages 2 and 3
  bool keep_gathered = false;                      // stage 3
  GradOverlap overlap = GradOverlap::automatic;    // full-gradient reductions

  bool shards_optimizer() const { return stage >= 1; }
  bool shards_gradients() const { return stage >= 2; }
  bool shards_parameters() const { return stage >= 3; }
  // Whether a full-size gradient is kept for the whole step.
  bool full_gradients() const { return stage <= 1 || reduce == GradReduce::per_step; }

  void validate() const {
    require(stage >= 0 && stage <= 3,
            "unknown ZeRO stage " + std::to_string(stage) + " (stages are 0, 1, 2 and 3)");
  }
};

template <int Stage>
inline constexpr ZeroPolicy Zero{Stage};

}  // namespace trident
