// trident/pp/simulate.hpp: plays every stage's schedule against the others.
//
// First, what must hold whatever the timing (else trident::Error naming the action): within a
// stage, a forward follows its recv_forward, a backward its forward and recv_backward, a send its
// compute, nothing happens twice; across stages, every receive meets exactly one send (same
// direction, microbatch, virtual stage, and peers) and every send is received; a zero-bubble W
// follows its B. Then the stages run
// against each other with the semantics of schedule.hpp (buffered sends, blocking receives): a
// state where no stage can move before all are done is a deadlock, reported with which stages
// wait for what. Costs: one microbatch through all of a stage's layers takes `forward` (or
// `backward`), so one of v chunks takes 1/v of it; a message arrives `p2p` after its send; a send
// costs the sender nothing. The timeline holds the forward and backward passes and, when p2p > 0,
// the part of each receive spent waiting for a message in transit.
#pragma once

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "../core/error.hpp"
#include "schedule.hpp"
#include "timeline.hpp"

namespace trident::pp {

// forward/backward: one microbatch through ALL of a stage's layers. backward is the fused
// backward; zero-bubble's W takes weight_fraction of it and B the rest (equal F, B and W, as in
// Qi et al. 2023's analysis: forward 1, backward 2, weight_fraction 0.5).
struct Costs {
  double forward = 1, backward = 1, p2p = 0, weight_fraction = 0.5;
};

struct Simulation {
  bool deadlock = false;
  std::string deadlock_reason;
  double makespan = 0;
  double bubble_fraction = 0;
  // peak_in_flight[s]: most microbatch-chunks whose forward has run on stage s and whose backward
  // (zero-bubble: whose W) has not (activations held).
  std::vector<int> peak_in_flight;
  // peak_before_input_gradient[s]: the same until the backward or B (the activations that B reads;
  // W reads only the layers' inputs and output gradients): 1F1B's peak_in_flight for ZB-H1.
  std::vector<int> peak_before_input_gradient;
  Timeline timeline;
};

namespace detail {

using Schedule = std::vector<std::vector<Action>>;

// "stage 1 action 4 (recv_forward of microbatch 3 chunk 0 from stage 0)"
inline std::string describe(const Schedule& schedule, int stage, size_t index) {
  const Action& a = schedule[stage][index];
  std::string s = "stage " + std::to_string(stage) + " action " + std::to_string(index) + " (" +
                  to_string(a.op) + " of microbatch " + std::to_string(a.microbatch) + " chunk " +
                  std::to_string(a.chunk);
  if (is_send(a.op)) s += " to stage " + std::to_string(a.peer);
  if (is_recv(a.op)) s += " from stage " + std::to_string(a.peer);
  return s + ")";
}

// A message: (is gradient, microbatch, receiving virtual stage, from rank, to rank).
using Message = std::tuple<bool, int, int, int, int>;

inline Message message_of(const Action& a, int stage, int stages) {
  const int g = a.chunk * stages + stage;
  const bool gradient = a.op == Op::send_backward || a.op == Op::recv_backward;
  if (is_send(a.op)) return {gradient, a.microbatch, gradient ? g - 1 : g + 1, stage, a.peer};
  return {gradient, a.microbatch, g, a.peer, stage};
}

// The checks that do not depend on timing; throws Error naming the first offending action.
inline void check_schedule(const Schedule& schedule, int chunks) {
  const int stages = static_cast<int>(schedule.size());
  std::map<Message, std::pair<int, size_t>> unreceived;  // send -> (stage, index)
  for (int s = 0; s < stages; ++s) {
    std::set<std::tuple<Op, int, int>> done;  // (op, microbatch, chunk)
    for (size_t i = 0; i < schedule[s].size(); ++i) {
      const Action& a = schedule[s][i];
      auto bad = [&](const std::string& why) {
        fail("pipeline schedule: " + describe(schedule, s, i) + " " + why);
      };
      auto has = [&](Op op) { return done.count({op, a.microbatch, a.chunk}) > 0; };
      if (a.microbatch < 0 || a.chunk < 0) bad("has a negative microbatch or chunk");
      if (!is_compute(a.op) && (a.peer < 0 || a.peer >= stages))
        bad("names a peer outside stages 0.." + std::to_string(stages - 1));
      if (has(a.op)) bad("happens twice");
      const int g = a.chunk * stages + s;
      const bool first = g == 0, last = g == chunks * stages - 1;
      switch (a.op) {
        case Op::forward:
          if (!first && !has(Op::recv_forward)) bad("runs before its recv_forward");
          break;
        case Op::backward:
        case Op::backward_input:
          if (!has(Op::forward)) bad("runs before its forward");
          if (!last && !has(Op::recv_backward)) bad("runs before its recv_backward");
          if (has(a.op == Op::backward ? Op::backward_input : Op::backward))
            bad("runs after the other kind of backward of the same microbatch");
          break;
        case Op::backward_weight:
          if (!has(Op::backward_input)) bad("runs before its backward_input");
          break;
        case Op::recv_forward:
          if (first) bad("receives on the first virtual stage");
          break;
        case Op::recv_backward:
          if (last) bad("receives on the last virtual stage");
          break;
        case Op::send_forward:
          if (last) bad("sends past the last virtual stage");
          if (!has(Op::forward)) bad("sends before its forward");
          break;
        case Op::send_backward:
          if (first) bad("sends before the first virtual stage");
          if (!has(Op::backward) && !has(Op::backward_input)) bad("sends before its backward");
          break;
      }
      done.insert({a.op, a.microbatch, a.chunk});
      if (is_send(a.op)) unreceived[message_of(a, s, stages)] = {s, i};
    }
  }
  for (int s = 0; s < stages; ++s)
    for (size_t i = 0; i < schedule[s].size(); ++i) {
      const Action& a = schedule[s][i];
      if (!is_recv(a.op)) continue;
      if (unreceived.erase(message_of(a, s, stages)) == 0)
        fail("pipeline schedule: " + describe(schedule, s, i) + " has no matching " +
             (a.op == Op::recv_forward ? "send_forward" : "send_backward") + " from stage " +
             std::to_string(a.peer) + " anywhere in the schedule");
    }
  if (!unreceived.empty()) {
    const auto [stage, index] = unreceived.begin()->second;
    fail("pipeline schedule: " + describe(schedule, stage, index) + " is never received");
  }
}

}  // namespace detail

inline Simulation simulate(const std::vector<std::vector<Action>>& schedule, Costs costs = {}) {
  const int stages = static_cast<int>(schedule.size());
  require(stages >= 1, "pipeline schedule: no stages to simulate");
  int chunks = 1;
  for (const auto& actions : schedule)
    for (const Action& a : actions) chunks = std::max(chunks, a.chunk + 1);
  detail::check_schedule(schedule, chunks);

  Simulation sim;
  sim.timeline.ranks = stages;
  sim.peak_in_flight.assign(stages, 0);
  sim.peak_before_input_gradient.assign(stages, 0);
  std::vector<int> in_flight(stages, 0), before_input_gradient(stages, 0);
  std::vector<size_t> next(stages, 0);     // each stage's next action
  std::vector<double> clock(stages, 0);    // and the time it can start
  std::map<detail::Message, double> sent;  // message -> time of its send
  auto run = [&](int s) {  // runs stage s's next action if it can; false when it must wait
    const Action& a = schedule[s][next[s]];
    double& t = clock[s];
    if (is_recv(a.op)) {
      const auto it = sent.find(detail::message_of(a, s, stages));
      if (it == sent.end()) return false;
      const double begin = std::max(t, it->second), end = std::max(t, it->second + costs.p2p);
      if (end > begin)
        sim.timeline.intervals.push_back(
            {s, IntervalKind::recv, a.microbatch, a.chunk, begin, end});
      t = end;
    } else if (is_send(a.op)) {
      sent[detail::message_of(a, s, stages)] = t;
    } else {
      const bool forward = a.op == Op::forward;
      const double share = a.op == Op::backward_input    ? 1 - costs.weight_fraction
                           : a.op == Op::backward_weight ? costs.weight_fraction
                                                         : 1;
      const double cost = (forward ? costs.forward : costs.backward * share) / chunks;
      const IntervalKind kind = forward                       ? IntervalKind::forward
                                : a.op == Op::backward_weight ? IntervalKind::weight
                                                              : IntervalKind::backward;
      sim.timeline.intervals.push_back({s, kind, a.microbatch, a.chunk, t, t + cost});
      t += cost;
      in_flight[s] += forward ? 1 : a.op == Op::backward_input ? 0 : -1;
      before_input_gradient[s] += forward ? 1 : a.op == Op::backward_weight ? 0 : -1;
      sim.peak_in_flight[s] = std::max(sim.peak_in_flight[s], in_flight[s]);
      sim.peak_before_input_gradient[s] =
          std::max(sim.peak_before_input_gradient[s], before_input_gradient[s]);
    }
    ++next[s];
    return true;
  };
  for (bool moved = true; moved;) {
    moved = false;
    for (int s = 0; s < stages; ++s)
      while (next[s] < schedule[s].size() && run(s)) moved = true;
  }
  for (int s = 0; s < stages; ++s) {
    if (next[s] == schedule[s].size()) continue;
    sim.deadlock = true;
    sim.deadlock_reason += std::string(sim.deadlock_reason.empty() ? "deadlock: " : "; ") +
                           detail::describe(schedule, s, next[s]) + " waits forever";
  }
  sim.makespan = sim.timeline.makespan();
  sim.bubble_fraction = sim.timeline.bubble_fraction();
  return sim;
}

}  // namespace trident::pp
