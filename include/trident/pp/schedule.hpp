// trident/pp/schedule.hpp: pipeline schedules as data.
//
// A schedule is, for each pipeline stage, the ordered list of what that stage does: forward and
// backward passes of (microbatch, chunk) and the point-to-point sends and receives around them.
// The same lists drive the MPI executor and the simulator (simulate.hpp), which proves that they
// match and cannot deadlock. Model chunk c on stage s is virtual stage c*stages + s (Megatron-LM's
// interleaved layer assignment); virtual stage g sends activations to g+1 and gradients to g-1,
// so the last stage's chunk c feeds stage 0's chunk c+1. Communication semantics: a send is
// buffered and never blocks; a receive blocks until its matching send has happened. Each compute
// action is preceded by its receive (when it has a previous/next virtual stage) and followed by
// its send. All schedules run the k-th forward and the k-th backward pass of one order
// (Megatron-LM's; detail::pass): warmup_forwards() forwards (the warm-up), then one forward and
// one backward at a time (steady state), then the remaining backwards (cool-down):
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
// And one schedule without backward, for evaluation and sampling (train/evaluate.hpp,
// train/sample.hpp):
//  - Forward-only: every stage runs the forwards of chunk 0 for microbatches 0..m-1, then of
//    chunk 1, ...: each stage receives, computes and sends, and nothing waits on a backward, so
//    the pipeline fills once per chunk (any m, any number of chunks).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../nn/backward_part.hpp"

namespace trident::pp {

enum class ScheduleKind { gpipe, one_f_one_b, interleaved, zb_h1, forward_only };

inline const char* to_string(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::gpipe:
      return "gpipe";
    case ScheduleKind::one_f_one_b:
      return "1f1b";
    case ScheduleKind::interleaved:
      return "interleaved";
    case ScheduleKind::zb_h1:
      return "zb-h1";
    case ScheduleKind::forward_only:
      return "forward-only";
  }
  return "?";
}

// "gpipe", "1f1b", "interleaved" or "zb-h1": the training schedules (forward-only is not one).
inline ScheduleKind parse_schedule(const std::string& name) {
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b,
                            ScheduleKind::interleaved, ScheduleKind::zb_h1})
    if (name == to_string(kind)) return kind;
  fail("unknown pipeline schedule '" + name + "' (expected gpipe, 1f1b, interleaved or zb-h1)");
}

// recv_forward: receive the input activation of (microbatch, chunk) from the previous virtual
// stage; send_forward: send this chunk's output activation to the next virtual stage;
// recv_backward: receive the gradient of this chunk's output from the next virtual stage;
// send_backward: send the gradient of this chunk's input to the previous virtual stage.
// backward is the fused backward; zero-bubble schedules split it into backward_input (B: the
// input gradient, followed by send_backward) and backward_weight (W: the weight gradients).
enum class Op {
  forward,
  backward,
  recv_forward,
  send_forward,
  recv_backward,
  send_backward,
  backward_input,
  backward_weight
};

inline const char* to_string(Op op) {
  switch (op) {
    case Op::forward:
      return "forward";
    case Op::backward:
      return "backward";
    case Op::recv_forward:
      return "recv_forward";
    case Op::send_forward:
      return "send_forward";
    case Op::recv_backward:
      return "recv_backward";
    case Op::send_backward:
      return "send_backward";
    case Op::backward_input:
      return "backward_input";
    case Op::backward_weight:
      return "backward_weight";
  }
  return "?";
}

// peer: pipeline rank of the other side for sends and receives, -1 for compute.
struct Action {
  Op op;
  int microbatch;
  int chunk;
  int peer;
};

inline bool operator==(const Action& a, const Action& b) {
  return a.op == b.op && a.microbatch == b.microbatch && a.chunk == b.chunk && a.peer == b.peer;
}

inline bool is_compute(Op op) {
  return op == Op::forward || op == Op::backward || op == Op::backward_input ||
         op == Op::backward_weight;
}
// The part of the layers' backward a compute action runs (nn/backward_part.hpp).
inline nn::BackwardPart backward_part(Op op) {
  return op == Op::backward_input    ? nn::BackwardPart::input
         : op == Op::backward_weight ? nn::BackwardPart::weight
                                     : nn::BackwardPart::both;
}
inline bool is_send(Op op) {
  return op == Op::send_forward || op == Op::send_backward;
}
inline bool is_recv(Op op) {
  return op == Op::recv_forward || op == Op::recv_backward;
}

// Compact form: F3 / B3 / W3 for compute (F3c1 for chunk 1; B3 is the fused backward, or B
// alone in zero-bubble schedules), rF3<1 / sF3>2 for receiving the input of F3 from stage 1 /
// sending its output to stage 2, rB3<2 / sB3>1 likewise for gradients.
inline std::string to_string(const Action& a) {
  const bool forward = a.op == Op::forward || a.op == Op::recv_forward || a.op == Op::send_forward;
  std::string s = is_recv(a.op) ? "r" : is_send(a.op) ? "s" : "";
  s += (forward ? "F" : a.op == Op::backward_weight ? "W" : "B") + std::to_string(a.microbatch);
  if (a.chunk != 0) s += "c" + std::to_string(a.chunk);
  if (!is_compute(a.op)) s += (is_recv(a.op) ? "<" : ">") + std::to_string(a.peer);
  return s;
}

struct ScheduleSpec {
  ScheduleKind kind;
  int stages;
  int microbatches;
  int chunks = 1;
};

inline void validate(const ScheduleSpec& spec) {
  const std::string name = std::string("pipeline schedule ") + to_string(spec.kind) + ": ";
  require(spec.stages >= 1,
          name + "stages must be at least 1 (got " + std::to_string(spec.stages) + ")");
  require(spec.microbatches >= 1,
          name + "microbatches must be at least 1 (got " + std::to_string(spec.microbatches) + ")");
  if (spec.kind == ScheduleKind::forward_only) {
    require(spec.chunks >= 1, name + "needs at least 1 model chunk per stage (got chunks = " +
                                  std::to_string(spec.chunks) + ")");
    return;
  }
  if (spec.kind != ScheduleKind::interleaved) {
    require(spec.chunks == 1, name + "takes 1 model chunk per stage (got chunks = " +
                                  std::to_string(spec.chunks) + "; use interleaved for more)");
    if (spec.kind == ScheduleKind::zb_h1)
      require(spec.microbatches >= spec.stages,
              name +
                  "needs at least as many microbatches as stages, m >= p (Qi et al. 2023 "
                  "§3.1): got " +
                  std::to_string(spec.microbatches) + " microbatches for " +
                  std::to_string(spec.stages) + " stages");
    return;
  }
  require(spec.chunks >= 2, name + "needs at least 2 model chunks per stage (got chunks = " +
                                std::to_string(spec.chunks) + ")");
  require(spec.microbatches % spec.stages == 0,
          name + "microbatches must be a multiple of stages (Narayanan et al. 2021 §2.2): got " +
              std::to_string(spec.microbatches) + " microbatches for " +
              std::to_string(spec.stages) + " stages");
}

// The warm-up: forwards `stage` runs before its steady state (one forward, one backward).
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
    case ScheduleKind::forward_only:
      return v * m;
  }
  return m;
}

namespace detail {

// One stage's list, written compute by compute with the receives and sends around each.
struct StageWriter {
  int stage, stages, chunks;
  std::vector<Action> actions;

  int prev() const { return (stage + stages - 1) % stages; }
  int next() const { return (stage + 1) % stages; }
  bool has_prev(int chunk) const { return chunk * stages + stage > 0; }
  bool has_next(int chunk) const { return chunk * stages + stage < chunks * stages - 1; }

  void forward(int mb, int chunk) {
    if (has_prev(chunk)) actions.push_back({Op::recv_forward, mb, chunk, prev()});
    actions.push_back({Op::forward, mb, chunk, -1});
    if (has_next(chunk)) actions.push_back({Op::send_forward, mb, chunk, next()});
  }
  // op: backward (fused) or backward_input (B); both receive and send the gradients.
  void backward(int mb, int chunk, Op op = Op::backward) {
    if (has_next(chunk)) actions.push_back({Op::recv_backward, mb, chunk, next()});
    actions.push_back({op, mb, chunk, -1});
    if (has_prev(chunk)) actions.push_back({Op::send_backward, mb, chunk, prev()});
  }
  void weight(int mb, int chunk) { actions.push_back({Op::backward_weight, mb, chunk, -1}); }
};

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

}  // namespace detail

// [stage] -> that stage's ordered actions.
inline std::vector<std::vector<Action>> make_schedule(const ScheduleSpec& spec) {
  validate(spec);
  const int passes = spec.microbatches * spec.chunks;
  std::vector<std::vector<Action>> schedule;
  for (int s = 0; s < spec.stages; ++s) {
    detail::StageWriter w{s, spec.stages, spec.chunks, {}};
    if (spec.kind == ScheduleKind::forward_only) {  // chunk by chunk, no backward
      for (int c = 0; c < spec.chunks; ++c)
        for (int mb = 0; mb < spec.microbatches; ++mb) w.forward(mb, c);
      schedule.push_back(std::move(w.actions));
      continue;
    }
    auto forward = [&](int k) {
      const detail::Pass f = detail::pass(spec, k, true);
      w.forward(f.microbatch, f.chunk);
    };
    // ZB-H1: B in backward's place, and the W of pass k - s after the B of pass k.
    const bool split = spec.kind == ScheduleKind::zb_h1;
    const int delay = s;
    int weights = 0;  // W passes written
    auto backward = [&](int k) {
      const detail::Pass b = detail::pass(spec, k, false);
      w.backward(b.microbatch, b.chunk, split ? Op::backward_input : Op::backward);
      for (; split && weights <= k - delay; ++weights) {
        const detail::Pass pw = detail::pass(spec, weights, false);
        w.weight(pw.microbatch, pw.chunk);
      }
    };
    const int warmup = warmup_forwards(spec, s);
    for (int k = 0; k < warmup; ++k) forward(k);  // warm-up
    for (int k = 0; k < passes - warmup; ++k) {   // steady state: 1F1B
      forward(warmup + k);
      backward(k);
    }
    for (int k = passes - warmup; k < passes; ++k) backward(k);  // cool-down
    for (; split && weights < passes; ++weights) {               // ZB-H1: the deferred W passes
      const detail::Pass pw = detail::pass(spec, weights, false);
      w.weight(pw.microbatch, pw.chunk);
    }
    schedule.push_back(std::move(w.actions));
  }
  return schedule;
}

}  // namespace trident::pp
