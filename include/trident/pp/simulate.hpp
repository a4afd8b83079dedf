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

// One microbatch through all of one stage's layers, as measured: the forward, the fused backward
// (GPipe, 1F1B, interleaved) and zero-bubble's B and W.
struct PassTimes {
  double forward = 0, backward = 0, backward_input = 0, weight = 0;
  PassTimes scaled(double k) const {
    return {k * forward, k * backward, k * backward_input, k * weight};
  }
};

// forward/backward: one microbatch through ALL of a stage's layers. backward is the fused
// backward; zero-bubble's W takes weight_fraction of it and B the rest (equal F, B and W, as in
// Qi et al. 2023's analysis: forward 1, backward 2, weight_fraction 0.5): every stage the same.
// `stage`, when not empty, gives each stage its own times instead (a replay of measured ones).
struct Costs {
  double forward = 1, backward = 1, p2p = 0, weight_fraction = 0.5;
  std::vector<PassTimes> stage = {};
  // Every stage's times from the four numbers: F, the fused backward, and its B and W shares.
  PassTimes pass_times() const {
    return {forward, backward, backward * (1 - weight_fraction), backward * weight_fraction};
  }
};

struct Simulation {
  bool deadlock = false;
  std::string deadlock_reason;
  double makespan = 0;
  double bubble_share = 0;  // idle / (stages x makespan), timeline.hpp
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

inline Message message_of(const Action& a, int stage, const ChunkMap& map) {
  const int g = map.virtual_stage(a.chunk, stage);
  const bool gradient = a.op == Op::send_backward || a.op == Op::recv_backward;
  if (is_send(a.op)) return {gradient, a.microbatch, gradient ? g - 1 : g + 1, stage, a.peer};
  return {gradient, a.microbatch, g, a.peer, stage};
}

// Why action a on stage s, virtual stage g, cannot run when `done` holds the (op, microbatch,
// chunk) the stage has run before it; empty if it can.
inline std::string order_problem(const Action& a, const ChunkMap& map, int s,
                                 const std::set<std::tuple<Op, int, int>>& done) {
  const int stages = map.stages;
  auto has = [&](Op op) { return done.count({op, a.microbatch, a.chunk}) > 0; };
  if (a.microbatch < 0 || a.chunk < 0) return "has a negative microbatch or chunk";
  if (!is_compute(a.op) && (a.peer < 0 || a.peer >= stages))
    return "names a peer outside stages 0.." + std::to_string(stages - 1);
  if (has(a.op)) return "happens twice";
  const bool first = map.is_first(a.chunk, s), last = map.is_last(a.chunk, s);
  switch (a.op) {
    case Op::forward:
      if (!first && !has(Op::recv_forward)) return "runs before its recv_forward";
      break;
    case Op::backward:
    case Op::backward_input:
      if (!has(Op::forward)) return "runs before its forward";
      if (!last && !has(Op::recv_backward)) return "runs before its recv_backward";
      if (has(a.op == Op::backward ? Op::backward_input : Op::backward))
        return "runs after the other kind of backward of the same microbatch";
      break;
    case Op::backward_weight:
      if (!has(Op::backward_input)) return "runs before its backward_input";
      break;
    case Op::recv_forward:
      if (first) return "receives on the first virtual stage";
      break;
    case Op::recv_backward:
      if (last) return "receives on the last virtual stage";
      break;
    case Op::send_forward:
      if (last) return "sends past the last virtual stage";
      if (!has(Op::forward)) return "sends before its forward";
      break;
    case Op::send_backward:
      if (first) return "sends before the first virtual stage";
      if (!has(Op::backward) && !has(Op::backward_input)) return "sends before its backward";
      break;
  }
  return "";
}

// Every receive meets exactly one send and every send is received; `unreceived`: each send's
// message -> (stage, index).
inline void check_messages(const Schedule& schedule, const ChunkMap& map,
                           std::map<Message, std::pair<int, size_t>> unreceived) {
  const int stages = static_cast<int>(schedule.size());
  for (int s = 0; s < stages; ++s)
    for (size_t i = 0; i < schedule[s].size(); ++i) {
      const Action& a = schedule[s][i];
      if (!is_recv(a.op)) continue;
      if (unreceived.erase(message_of(a, s, map)) == 0)
        fail("pipeline schedule: " + describe(schedule, s, i) + " has no matching " +
             (a.op == Op::recv_forward ? "send_forward" : "send_backward") + " from stage " +
             std::to_string(a.peer) + " anywhere in the schedule");
    }
  if (!unreceived.empty()) {
    const auto [stage, index] = unreceived.begin()->second;
    fail("pipeline schedule: " + describe(schedule, stage, index) + " is never received");
  }
}

// The checks that do not depend on timing; throws Error naming the first offending action.
inline void check_schedule(const Schedule& schedule, const ChunkMap& map) {
  const int stages = static_cast<int>(schedule.size());
  std::map<Message, std::pair<int, size_t>> sent;  // send -> (stage, index)
  for (int s = 0; s < stages; ++s) {
    std::set<std::tuple<Op, int, int>> done;  // (op, microbatch, chunk)
    for (size_t i = 0; i < schedule[s].size(); ++i) {
      const Action& a = schedule[s][i];
      const std::string why = order_problem(a, map, s, done);
      if (!why.empty()) fail("pipeline schedule: " + describe(schedule, s, i) + " " + why);
      done.insert({a.op, a.microbatch, a.chunk});
      if (is_send(a.op)) sent[message_of(a, s, map)] = {s, i};
    }
  }
  check_messages(schedule, map, std::move(sent));
}

// The stages played against each other (schedule.hpp's semantics), filling a Simulation.
class Player {
 public:
  Player(const Schedule& schedule, const Costs& costs, const ChunkMap& map)
      : schedule_(schedule),
        costs_(costs),
        map_(map),
        stages_(map.stages),
        chunks_(map.chunks),
        in_flight_(stages_, 0),
        before_input_gradient_(stages_, 0),
        next_(stages_, 0),
        clock_(stages_, 0) {
    sim_.timeline.ranks = stages_;
    sim_.peak_in_flight.assign(stages_, 0);
    sim_.peak_before_input_gradient.assign(stages_, 0);
  }

  // Runs every stage as far as it can, round after round, until none moves.
  Simulation play() {
    for (bool moved = true; moved;) {
      moved = false;
      for (int s = 0; s < stages_; ++s)
        while (next_[s] < schedule_[s].size() && step(s)) moved = true;
    }
    for (int s = 0; s < stages_; ++s) {
      if (next_[s] == schedule_[s].size()) continue;
      sim_.deadlock = true;
      sim_.deadlock_reason += std::string(sim_.deadlock_reason.empty() ? "deadlock: " : "; ") +
                              describe(schedule_, s, next_[s]) + " waits forever";
    }
    sim_.makespan = sim_.timeline.makespan();
    sim_.bubble_share = sim_.timeline.bubble_share();
    return std::move(sim_);
  }

 private:
  // Runs stage s's next action if it can; false when it must wait.
  bool step(int s) {
    const Action& a = schedule_[s][next_[s]];
    if (is_recv(a.op)) {
      if (!receive(s, a)) return false;
    } else if (is_send(a.op)) {
      sent_[message_of(a, s, map_)] = clock_[s];
    } else {
      compute(s, a);
    }
    ++next_[s];
    return true;
  }
  bool receive(int s, const Action& a) {
    const auto it = sent_.find(message_of(a, s, map_));
    if (it == sent_.end()) return false;
    double& t = clock_[s];
    const double begin = std::max(t, it->second), end = std::max(t, it->second + costs_.p2p);
    if (end > begin)
      sim_.timeline.intervals.push_back({s, IntervalKind::recv, a.microbatch, a.chunk, begin, end});
    t = end;
    return true;
  }
  // What action `op` costs stage s: one chunk's share of a whole microbatch's pass.
  double cost_of(int s, Op op) const {
    const PassTimes& t = costs_.stage[s];
    return (op == Op::forward           ? t.forward
            : op == Op::backward_input  ? t.backward_input
            : op == Op::backward_weight ? t.weight
                                        : t.backward) /
           chunks_;
  }
  void compute(int s, const Action& a) {
    const bool forward = a.op == Op::forward;
    const double cost = cost_of(s, a.op);
    const IntervalKind kind = forward                       ? IntervalKind::forward
                              : a.op == Op::backward_weight ? IntervalKind::weight
                                                            : IntervalKind::backward;
    double& t = clock_[s];
    sim_.timeline.intervals.push_back({s, kind, a.microbatch, a.chunk, t, t + cost});
    t += cost;
    in_flight_[s] += forward ? 1 : a.op == Op::backward_input ? 0 : -1;
    before_input_gradient_[s] += forward ? 1 : a.op == Op::backward_weight ? 0 : -1;
    sim_.peak_in_flight[s] = std::max(sim_.peak_in_flight[s], in_flight_[s]);
    sim_.peak_before_input_gradient[s] =
        std::max(sim_.peak_before_input_gradient[s], before_input_gradient_[s]);
  }

  const Schedule& schedule_;
  Costs costs_;
  ChunkMap map_;
  int stages_, chunks_;
  Simulation sim_;
  std::vector<int> in_flight_, before_input_gradient_;
  std::vector<size_t> next_;        // each stage's next action
  std::vector<double> clock_;       // and the time it can start
  std::map<Message, double> sent_;  // message -> time of its send
};

}  // namespace detail

// placement: where the schedule's chunks sit (placement.hpp; chunk_map(spec).placement for a
// schedule from make_schedule); the number of chunks is read from the actions.
inline Simulation simulate(const std::vector<std::vector<Action>>& schedule, Costs costs = {},
                           ChunkPlacement placement = ChunkPlacement::looped) {
  require(!schedule.empty(), "pipeline schedule: no stages to simulate");
  require(costs.stage.empty() || costs.stage.size() == schedule.size(),
          "pipeline schedule: pass times given for " + std::to_string(costs.stage.size()) +
              " stage(s), the schedule has " + std::to_string(schedule.size()));
  if (costs.stage.empty()) costs.stage.assign(schedule.size(), costs.pass_times());
  int chunks = 1;
  for (const auto& actions : schedule)
    for (const Action& a : actions) chunks = std::max(chunks, a.chunk + 1);
  const ChunkMap map{placement, static_cast<int>(schedule.size()), chunks};
  detail::check_schedule(schedule, map);
  return detail::Player(schedule, costs, map).play();
}

}  // namespace trident::pp
