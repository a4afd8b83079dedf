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
// Callers ask the predicates below, never the stage number (cmake/check_code_rules.cmake).
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

  // What it shards over DP (ZeRO §5.1-5.3: P_os, P_g, P_p).
  bool shards_optimizer() const { return stage >= 1; }   // P_os: stages 1-3
  bool shards_gradients() const { return stage >= 2; }   // P_g: stages 2, 3
  bool shards_parameters() const { return stage >= 3; }  // P_p: stage 3

  // How and when it reduces the gradients over DP (ZeRO §7.2).
  // Plain data parallelism (stage 0): all-reduce, every rank holds the whole summed gradient.
  bool all_reduces_gradients() const { return stage == 0; }
  // Stages 1-3: reduce-scatter, each rank holds the sum of the shard it owns (ZeRO §7.2.1).
  bool reduces_to_owners() const { return !all_reduces_gradients(); }
  // Stages 2, 3 under GradReduce::per_microbatch: a reduce-scatter after each microbatch's
  // backward, as DeepSpeed does; else once per step, after the unit's last backward.
  bool reduces_per_microbatch() const {
    return shards_gradients() && reduce == GradReduce::per_microbatch;
  }
  // A full-size gradient kept for the whole step, reduced after the unit's last backward.
  bool full_gradients() const { return !reduces_per_microbatch(); }

  // When parameters are all-gathered over DP (ZeRO §7.2).
  // Stages 1, 2: the updated shards, after the optimizer, into every rank's full parameters.
  bool publishes_parameters() const { return shards_optimizer() && !shards_parameters(); }
  // Stage 3: each unit gathered before every forward and backward that reads it (ZeRO §7.2.2).
  bool gathers_per_microbatch() const { return shards_parameters() && !keep_gathered; }
  // Stage 3 with keep_gathered: each unit gathered at its first use and kept for the step.
  bool keeps_parameters_gathered() const { return shards_parameters() && keep_gathered; }
  // One all-gather of each unit per step: published (stages 1, 2) or kept gathered (stage 3).
  bool gathers_once_per_step() const {
    return publishes_parameters() || keeps_parameters_gathered();
  }

  // Whether `stage` names a stage at all (a plan's or a command line's number).
  bool valid() const { return stage >= 0 && stage <= 3; }
  void validate() const {
    require(valid(), "unknown ZeRO stage " + std::to_string(stage) + " (stages are 0, 1, 2 and 3)");
  }
};

template <int Stage>
inline constexpr ZeroPolicy Zero{Stage};

}  // namespace trident
