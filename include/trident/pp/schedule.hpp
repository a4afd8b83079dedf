// trident/pp/schedule.hpp: pipeline schedules as data.
//
// A schedule is, for each pipeline stage (rank), the ordered list of what that stage does
// (action.hpp): forward and backward passes of (microbatch, chunk) and the point-to-point sends
// and receives around them. The same lists drive the MPI executor and the simulator
// (simulate.hpp), which proves that they match and cannot deadlock. Which virtual stage a chunk
// is, and so where it sends, is the placement (placement.hpp): looped (chunk c on stage s is
// virtual stage c*stages + s, Megatron-LM's interleaved assignment) for all schedules but ZB-V;
// virtual stage g sends activations to g+1 and gradients to g-1. Communication semantics: a send
// is buffered and never blocks; a receive blocks until its matching send has happened. Each
// compute action is preceded by its receive (when it has a previous/next virtual stage) and
// followed by its send. The looped schedules run the k-th forward and the k-th backward pass of
// one order (Megatron-LM's; detail::pass): warmup_forwards() forwards (the warm-up), then one
// forward and one backward at a time (steady state), then the remaining backwards (cool-down):
//  - GPipe (Huang et al. 2019): warm-up of all m forwards, then all backwards, in the same
//    microbatch order as the forwards (as drawn in Narayanan et al. 2021, Fig. 3, and run by
//    PyTorch's ScheduleGPipe).
//  - 1F1B (PipeDream-Flush, Narayanan et al. 2021 §2.2): warm-up of min(p - s - 1, m) forwards.
//  - Interleaved 1F1B (Narayanan et al. 2021 §2.2), as Megatron-LM schedules it: microbatches go
//    in groups of p through chunk 0, then chunk 1, ... (backward: last chunk first); warm-up of
//    min(2 (p - s - 1) + (v - 1) p, v m) forwards. Requires m to be a multiple of p.
//  - ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", §3.1): each backward split into
//    B (input gradient, sent upstream at once) and W (weight gradient, deferrable). F and B
//    follow 1F1B; stage s runs the W of microbatch k after the B of microbatch k + s, so W
//    passes fill what 1F1B leaves idle, and the rest at the end. Activations held: at most p
//    microbatches on every stage (1F1B's peak, reached by stage 0), of which on stage s 1F1B's
//    p - s until their B and s more until their W, holding only what W reads (the linear
//    layers' inputs and output gradients); bubble (p-1)(F + B - W) instead of 1F1B's
//    (p-1)(F + B + W). Requires m >= p.
// And one V-shaped schedule (placement V-shape, 2 chunks per stage; its rule in schedule_zbv.hpp):
//  - ZB-V (Qi et al. 2024, "Pipeline Parallelism with Controllable Memory"): B and W split as in
//    ZB-H1, the first and last virtual stages both on stage 0; at most 1F1B's peak of
//    activations on every stage; with equal F, B and W, once m >= 2p - 1, idle only while the
//    first microbatch goes down the V: (p-1) F/2. Requires m >= p.
// And one schedule without backward, for evaluation and sampling (train/evaluate.hpp,
// train/sample.hpp):
//  - Forward-only: every stage runs the forwards of chunk 0 for microbatches 0..m-1, then of
//    chunk 1, ...: each stage receives, computes and sends, and nothing waits on a backward, so
//    the pipeline fills once per chunk (any m, any number of chunks, either placement: that of
//    the training schedule whose chunks it runs).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "action.hpp"
#include "placement.hpp"
#include "schedule_traits.hpp"
#include "schedule_zbv.hpp"

namespace trident::pp {

// "gpipe", "1f1b", "interleaved", "zb-h1" or "zbv": the training schedules (forward-only is
// not one).
inline ScheduleKind parse_schedule(const std::string& name) {
  std::string names;
  for (ScheduleKind kind : kTrainingSchedules) {
    if (name == to_string(kind)) return kind;
    names += std::string(names.empty()               ? ""
                         : kind == ScheduleKind::zbv ? " or "
                                                     : ", ") +
             to_string(kind);
  }
  fail("unknown pipeline schedule '" + name + "' (expected " + names + ")");
}

struct ScheduleSpec {
  ScheduleKind kind;
  int stages;
  int microbatches;
  int chunks = 1;
  // Forward-only: the placement of the training schedule whose chunks it runs; the training
  // schedules place their own (their traits).
  ChunkPlacement placement = ChunkPlacement::looped;
};

// Where the spec's chunks sit (placement.hpp).
inline ChunkMap chunk_map(const ScheduleSpec& spec) {
  const ScheduleTraits& t = traits(spec.kind);
  return {t.trains ? t.placement : spec.placement, spec.stages, spec.chunks};
}

namespace detail {
inline std::string counted(int n, const char* what) {
  return std::to_string(n) + " " + what;
}

// The schedule's rules (its traits): placement, model chunks per stage, microbatches.
inline void validate_rules(const ScheduleSpec& spec, const std::string& name) {
  const ScheduleTraits& t = traits(spec.kind);
  require(!t.trains || spec.placement == ChunkPlacement::looped ||
              t.placement == ChunkPlacement::v_shape,
          name + "places its chunks looped (the V-shape is zbv's)");
  const std::string chunks =
      counted(t.min_chunks, t.min_chunks == 1 ? "model chunk" : "model chunks");
  require(t.takes_chunks(spec.chunks),
          name + (t.max_chunks == 0 ? "needs at least " : "takes ") + chunks + " per stage" +
              (t.placement == ChunkPlacement::v_shape ? ", placed in a V" : "") +
              " (got chunks = " + std::to_string(spec.chunks) +
              (t.max_chunks == 1 ? "; use interleaved for more)" : ")"));
  const std::string numbers = " (" + std::string(t.source) + "): got " +
                              counted(spec.microbatches, "microbatches for ") +
                              counted(spec.stages, "stages");
  require(!t.microbatches_multiple_of_stages || spec.microbatches % spec.stages == 0,
          name + "microbatches must be a multiple of stages" + numbers);
  require(!t.microbatches_at_least_stages || spec.microbatches >= spec.stages,
          name + "needs at least as many microbatches as stages, m >= p" + numbers);
}
}  // namespace detail

inline void validate(const ScheduleSpec& spec) {
  const std::string name = std::string("pipeline schedule ") + to_string(spec.kind) + ": ";
  require(spec.stages >= 1,
          name + "stages must be at least 1 (got " + std::to_string(spec.stages) + ")");
  require(spec.microbatches >= 1,
          name + "microbatches must be at least 1 (got " + std::to_string(spec.microbatches) + ")");
  detail::validate_rules(spec, name);
}

// The warm-up of the looped schedules: forwards `stage` runs before its steady state (one
// forward, one backward).
inline int warmup_forwards(const ScheduleSpec& spec, int stage) {
  const int p = spec.stages, m = spec.microbatches, v = spec.chunks;
  switch (spec.kind) {
    case ScheduleKind::gpipe:
      return m;
    case ScheduleKind::one_f_one_b:
    case ScheduleKind::zb_h1:
      return std::min(p - stage - 1, m);
    case ScheduleKind::interleaved:
      return std::min(2 * (p - stage - 1) + (v - 1) * p, v * m);
    case ScheduleKind::zbv:
      fail("warmup_forwards: zbv is not a looped schedule (its rule: schedule_zbv.hpp)");
    case ScheduleKind::forward_only:
      return v * m;
  }
  return m;
}

namespace detail {

// The k-th forward (or backward) pass, the same on every stage: groups of p microbatches go
// through chunk 0, 1, ..., v-1 (Megatron-LM's order); backward visits the chunks in reverse.
struct Pass {
  int microbatch, chunk;
};
inline Pass pass(const ScheduleSpec& spec, int k, bool forward) {
  const int p = spec.stages, v = spec.chunks;
  const int in_group = k % (p * v);
  const int chunk = in_group / p;
  return {k / (p * v) * p + in_group % p, forward ? chunk : v - 1 - chunk};
}

// One stage of a looped schedule: warm-up, steady state (one forward, one backward), cool-down.
// ZB-H1: B in backward's place, and the W of pass k - s after the B of pass k; the rest last.
inline void write_looped(StageWriter& w, const ScheduleSpec& spec) {
  const int passes = spec.microbatches * spec.chunks, s = w.stage;
  const bool split = spec.kind == ScheduleKind::zb_h1;
  int weights = 0;  // W passes written
  auto forward = [&](int k) {
    const Pass f = pass(spec, k, true);
    w.forward(f.microbatch, f.chunk);
  };
  auto weight_until = [&](int k) {
    for (; split && weights <= k; ++weights) {
      const Pass pw = pass(spec, weights, false);
      w.weight(pw.microbatch, pw.chunk);
    }
  };
  auto backward = [&](int k) {
    const Pass b = pass(spec, k, false);
    w.backward(b.microbatch, b.chunk, split ? Op::backward_input : Op::backward);
    weight_until(k - s);
  };
  const int warmup = warmup_forwards(spec, s);
  for (int k = 0; k < warmup; ++k) forward(k);  // warm-up
  for (int k = 0; k < passes - warmup; ++k) {   // steady state: 1F1B
    forward(warmup + k);
    backward(k);
  }
  for (int k = passes - warmup; k < passes; ++k) backward(k);  // cool-down
  weight_until(passes - 1);                                    // ZB-H1: the deferred W passes
}

}  // namespace detail

// [stage] -> that stage's ordered actions.
inline std::vector<std::vector<Action>> make_schedule(const ScheduleSpec& spec) {
  validate(spec);
  std::vector<std::vector<Action>> schedule;
  for (int s = 0; s < spec.stages; ++s) {
    detail::StageWriter w{s, chunk_map(spec), {}};
    if (spec.kind == ScheduleKind::forward_only) {  // chunk by chunk, no backward
      for (int c = 0; c < spec.chunks; ++c)
        for (int mb = 0; mb < spec.microbatches; ++mb) w.forward(mb, c);
    } else if (spec.kind == ScheduleKind::zbv) {
      detail::write_zbv(w, spec.microbatches);
    } else {
      detail::write_looped(w, spec);
    }
    schedule.push_back(std::move(w.actions));
  }
  return schedule;
}

}  // namespace trident::pp
