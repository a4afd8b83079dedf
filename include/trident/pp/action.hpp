// trident/pp/action.hpp: what a pipeline rank does, one action at a time, and the writer that
// puts the receives and sends around each compute action (schedule.hpp builds the lists).
//
// A compute action runs a forward, a backward, or zero-bubble's B or W, of one (microbatch,
// chunk); a send or receive moves that chunk's activation (forward direction) or its gradient
// (backward) to or from the rank holding the neighbouring virtual stage (placement.hpp).
#pragma once

#include <string>
#include <vector>

#include "../nn/backward_part.hpp"
#include "placement.hpp"

namespace trident::pp {

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

namespace detail {

// One rank's list, written compute by compute with the receives and sends around each: the
// neighbours of chunk c are the ranks of virtual stages g - 1 and g + 1 (placement.hpp).
struct StageWriter {
  int stage;
  ChunkMap map;
  std::vector<Action> actions;

  int prev(int chunk) const { return map.rank(map.virtual_stage(chunk, stage) - 1); }
  int next(int chunk) const { return map.rank(map.virtual_stage(chunk, stage) + 1); }
  bool has_prev(int chunk) const { return !map.is_first(chunk, stage); }
  bool has_next(int chunk) const { return !map.is_last(chunk, stage); }

  void forward(int mb, int chunk) {
    if (has_prev(chunk)) actions.push_back({Op::recv_forward, mb, chunk, prev(chunk)});
    actions.push_back({Op::forward, mb, chunk, -1});
    if (has_next(chunk)) actions.push_back({Op::send_forward, mb, chunk, next(chunk)});
  }
  // op: backward (fused) or backward_input (B); both receive and send the gradients.
  void backward(int mb, int chunk, Op op = Op::backward) {
    if (has_next(chunk)) actions.push_back({Op::recv_backward, mb, chunk, next(chunk)});
    actions.push_back({op, mb, chunk, -1});
    if (has_prev(chunk)) actions.push_back({Op::send_backward, mb, chunk, prev(chunk)});
  }
  void weight(int mb, int chunk) { actions.push_back({Op::backward_weight, mb, chunk, -1}); }
};

}  // namespace detail

}  // namespace trident::pp
