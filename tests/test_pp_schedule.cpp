// pp/ schedules as data: structure of GPipe, 1F1B and interleaved 1F1B, the simulator against
// the papers' bubble formulas and activation counts, deadlock and mismatch detection, and
// validate()'s messages (ZB-H1: test_pp_zb_h1.cpp; ZB-V: test_pp_zbv.cpp; the timeline's
// exports: test_pp_timeline.cpp). No MPI communication: runs on one rank.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <trident/plan/formulas.hpp>
#include <trident/pp/schedule.hpp>
#include <trident/pp/simulate.hpp>

#include "pp_specs.hpp"

using namespace trident;
using namespace trident::pp;
using namespace pp_test;

TEST_CASE("parse_schedule and to_string round-trip; unknown names are an Error") {
  for (ScheduleKind k : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::interleaved,
                         ScheduleKind::zb_h1, ScheduleKind::zbv})
    CHECK(parse_schedule(to_string(k)) == k);
  CHECK(parse_schedule("1f1b") == ScheduleKind::one_f_one_b);
  CHECK(parse_schedule("zb-h1") == ScheduleKind::zb_h1);
  CHECK_THROWS_WITH_AS(
      parse_schedule("pipedream"),
      "unknown pipeline schedule 'pipedream' (expected gpipe, 1f1b, interleaved, zb-h1 or zbv)",
      Error);
}

TEST_CASE("validate() names the offending numbers") {
  CHECK_THROWS_WITH_AS(validate({ScheduleKind::gpipe, 0, 4}),
                       "pipeline schedule gpipe: stages must be at least 1 (got 0)", Error);
  CHECK_THROWS_WITH_AS(validate({ScheduleKind::one_f_one_b, 2, 0}),
                       "pipeline schedule 1f1b: microbatches must be at least 1 (got 0)", Error);
  CHECK_THROWS_WITH_AS(validate({ScheduleKind::one_f_one_b, 2, 4, 2}),
                       "pipeline schedule 1f1b: takes 1 model chunk per stage (got chunks = 2; "
                       "use interleaved for more)",
                       Error);
  CHECK_THROWS_WITH_AS(validate({ScheduleKind::interleaved, 2, 4, 1}),
                       "pipeline schedule interleaved: needs at least 2 model chunks per stage "
                       "(got chunks = 1)",
                       Error);
  CHECK_THROWS_WITH_AS(validate({ScheduleKind::interleaved, 4, 6, 2}),
                       "pipeline schedule interleaved: microbatches must be a multiple of stages "
                       "(Narayanan et al. 2021 §2.2): got 6 microbatches for 4 stages",
                       Error);
  CHECK_THROWS_AS(make_schedule({ScheduleKind::interleaved, 4, 6, 2}), Error);
  CHECK_NOTHROW(validate({ScheduleKind::interleaved, 4, 8, 2}));
}

TEST_CASE("1F1B for p=4, m=8 on stage 1: 2 warm-up forwards, 1F1B, 2 cool-down backwards") {
  const auto schedule = make_schedule({ScheduleKind::one_f_one_b, 4, 8});
  std::string compute, all;
  for (const Action& a : schedule[1]) {
    all += " " + to_string(a);
    if (is_compute(a.op)) compute += " " + to_string(a);
  }
  CHECK(compute == " F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
  CHECK(all.substr(0, 30) == " rF0<0 F0 sF0>2 rF1<0 F1 sF1>2");
  const std::vector<Action> last_stage_start = {{Op::recv_forward, 0, 0, 2},
                                                {Op::forward, 0, 0, -1},
                                                {Op::backward, 0, 0, -1},
                                                {Op::send_backward, 0, 0, 2}};
  CHECK(std::equal(last_stage_start.begin(), last_stage_start.end(), schedule[3].begin()));
}

TEST_CASE("GPipe p=2, m=3: all forwards, then all backwards in the same microbatch order") {
  const auto schedule = make_schedule({ScheduleKind::gpipe, 2, 3});
  for (int s = 0; s < 2; ++s) {
    std::string compute;
    for (const Action& a : schedule[s])
      if (is_compute(a.op)) compute += " " + to_string(a);
    CHECK(compute == " F0 F1 F2 B0 B1 B2");
  }
}

TEST_CASE("interleaved p=2, m=4, v=2: Megatron-LM's order; stage 1 chunk 0 feeds stage 0") {
  const auto schedule = make_schedule({ScheduleKind::interleaved, 2, 4, 2});
  std::string s0;
  for (const Action& a : schedule[0])
    if (is_compute(a.op)) s0 += " " + to_string(a);
  // warm-up 2 (p - s - 1) + (v - 1) p = 4 forwards, then 1F1B, then 4 backwards
  CHECK(s0 == " F0 F1 F0c1 F1c1 F2 B0c1 F3 B1c1 F2c1 B0 F3c1 B1 B2c1 B3c1 B2 B3");
  // stage 0's chunk 1 receives from stage 1 (virtual stage 1 -> 2) and sends gradients back to it
  const auto has = [&](int stage, const Action& a) {
    return std::find(schedule[stage].begin(), schedule[stage].end(), a) != schedule[stage].end();
  };
  CHECK(has(0, {Op::recv_forward, 0, 1, 1}));
  CHECK(has(1, {Op::send_forward, 0, 0, 0}));
  CHECK(has(0, {Op::send_backward, 0, 1, 1}));
  CHECK(has(1, {Op::recv_backward, 0, 0, 0}));
  CHECK_FALSE(has(1, {Op::send_forward, 0, 1, 0}));  // the last virtual stage sends nothing on
}

TEST_CASE(
    "each (microbatch, chunk): one forward, one backward or B + W, receive before, send after") {
  for (const ScheduleSpec& spec : all_specs()) {
    CAPTURE(name(spec));
    const auto schedule = make_schedule(spec);
    REQUIRE(static_cast<int>(schedule.size()) == spec.stages);
    const int p = spec.stages, v = spec.chunks, last = p * v - 1;
    const bool split = spec.kind == ScheduleKind::zb_h1;
    const Op backward = split ? Op::backward_input : Op::backward;
    for (int s = 0; s < p; ++s) {
      std::map<std::tuple<Op, int, int>, int> seen;
      std::vector<std::tuple<Op, int, int>> order;
      for (const Action& a : schedule[s]) {
        CHECK(a.microbatch >= 0);
        CHECK(a.microbatch < spec.microbatches);
        CHECK(a.chunk >= 0);
        CHECK(a.chunk < v);
        if (is_compute(a.op)) CHECK(a.peer == -1);
        if (a.op == Op::recv_forward || a.op == Op::send_backward) CHECK(a.peer == (s + p - 1) % p);
        if (a.op == Op::send_forward || a.op == Op::recv_backward) CHECK(a.peer == (s + 1) % p);
        ++seen[{a.op, a.microbatch, a.chunk}];
        order.push_back({a.op, a.microbatch, a.chunk});
      }
      for (int mb = 0; mb < spec.microbatches; ++mb)
        for (int c = 0; c < v; ++c) {
          const int g = c * p + s;
          CHECK(seen[{Op::forward, mb, c}] == 1);
          CHECK(seen[{Op::backward, mb, c}] == !split);
          CHECK(seen[{Op::backward_input, mb, c}] == split);
          CHECK(seen[{Op::backward_weight, mb, c}] == split);
          CHECK(seen[{Op::recv_forward, mb, c}] == (g > 0));
          CHECK(seen[{Op::send_backward, mb, c}] == (g > 0));
          CHECK(seen[{Op::send_forward, mb, c}] == (g < last));
          CHECK(seen[{Op::recv_backward, mb, c}] == (g < last));
          const auto at = [&](Op op) {
            return std::find(order.begin(), order.end(), std::make_tuple(op, mb, c)) -
                   order.begin();
          };
          if (g > 0) CHECK(at(Op::recv_forward) + 1 == at(Op::forward));
          if (g < last) CHECK(at(Op::forward) + 1 == at(Op::send_forward));
          if (g < last) CHECK(at(Op::recv_backward) + 1 == at(backward));
          if (g > 0) CHECK(at(backward) + 1 == at(Op::send_backward));
          CHECK(at(Op::forward) < at(backward));
          if (split) CHECK(at(backward) < at(Op::backward_weight));
        }
    }
  }
}

TEST_CASE("no deadlock for p in 1..8, m in 1..16, interleaved v in {2, 3}, also with p2p cost") {
  for (const ScheduleSpec& spec : all_specs()) {
    CAPTURE(name(spec));
    for (double p2p : {0.0, 0.3}) {
      const Simulation sim = simulate(make_schedule(spec), {1, 2, p2p});
      CHECK_FALSE(sim.deadlock);
      CHECK(sim.deadlock_reason.empty());
      int computes = 0;
      for (const Interval& s : sim.timeline.intervals) computes += is_compute(s.kind);
      const int passes = spec.kind == ScheduleKind::zb_h1 ? 3 : 2;  // F, B, W
      CHECK(computes == passes * spec.stages * spec.microbatches * spec.chunks);
    }
  }
}

TEST_CASE("GPipe and 1F1B bubble fraction is (p-1)/(m+p-1), with b = f and b = 2f") {
  for (const ScheduleSpec& spec : all_specs()) {
    if (spec.kind == ScheduleKind::interleaved || spec.kind == ScheduleKind::zb_h1) continue;
    CAPTURE(name(spec));
    const int p = spec.stages, m = spec.microbatches;
    for (double backward : {1.0, 2.0}) {
      const Simulation sim = simulate(make_schedule(spec), {1, backward, 0});
      CHECK(sim.bubble_share == doctest::Approx(pp::bubble_share(p, m)).epsilon(1e-12));
      CHECK(sim.makespan == doctest::Approx((m + p - 1) * (1 + backward)).epsilon(1e-12));
      CHECK(sim.timeline.bubble_share() == sim.bubble_share);
    }
  }
}

TEST_CASE("interleaving divides the bubble by v: bubble time / ideal time = (p-1)/(v m)") {
  for (const ScheduleSpec& spec : all_specs()) {
    if (spec.kind != ScheduleKind::interleaved) continue;
    CAPTURE(name(spec));
    const int p = spec.stages, m = spec.microbatches, v = spec.chunks;
    for (double backward : {1.0, 2.0}) {
      const Simulation sim = simulate(make_schedule(spec), {1, backward, 0});
      const double ideal = m * (1 + backward);
      CHECK((sim.makespan - ideal) / ideal == doctest::Approx(pp::bubble_over_ideal(p, m, v)));
      CHECK(sim.bubble_share == doctest::Approx(pp::bubble_share(p, m, v)));
    }
  }
  // and against 1F1B on the same pipeline: p = 4, m = 8, v = 2 halves the bubble time
  const double plain = simulate(make_schedule({ScheduleKind::one_f_one_b, 4, 8})).makespan - 16;
  const double inter = simulate(make_schedule({ScheduleKind::interleaved, 4, 8, 2})).makespan - 16;
  CHECK(inter == doctest::Approx(plain / 2));
}

// Interleaved: Megatron-LM's warm-up forwards plus the steady state's one, counted in chunks.
TEST_CASE("peak in-flight: GPipe m, 1F1B min(m, p - s) on stage s, interleaved warm-up + 1") {
  for (const ScheduleSpec& spec : all_specs()) {
    if (spec.kind == ScheduleKind::zb_h1) continue;
    CAPTURE(name(spec));
    const int p = spec.stages, m = spec.microbatches, v = spec.chunks;
    const Simulation sim = simulate(make_schedule(spec));
    REQUIRE(static_cast<int>(sim.peak_in_flight.size()) == p);
    for (int s = 0; s < p; ++s) {
      const int expected = spec.kind == ScheduleKind::gpipe ? m
                           : spec.kind == ScheduleKind::one_f_one_b
                               ? std::min(m, p - s)
                               : std::min(v * m, 2 * (p - s - 1) + (v - 1) * p + 1);
      CHECK(sim.peak_in_flight[s] == expected);
    }
  }
}

TEST_CASE("a cycle of receives is reported as a deadlock naming who waits for what") {
  // Stage 0 waits for B0's gradient before sending F0's activation, which stage 1 needs first.
  const std::vector<std::vector<Action>> broken = {{{Op::recv_backward, 0, 0, 1},
                                                    {Op::forward, 0, 0, -1},
                                                    {Op::send_forward, 0, 0, 1},
                                                    {Op::backward, 0, 0, -1}},
                                                   {{Op::recv_forward, 0, 0, 0},
                                                    {Op::forward, 0, 0, -1},
                                                    {Op::backward, 0, 0, -1},
                                                    {Op::send_backward, 0, 0, 0}}};
  const Simulation sim = simulate(broken);
  CHECK(sim.deadlock);
  CHECK(sim.deadlock_reason ==
        "deadlock: stage 0 action 0 (recv_backward of microbatch 0 chunk 0 from stage 1) waits "
        "forever; stage 1 action 0 (recv_forward of microbatch 0 chunk 0 from stage 0) waits "
        "forever");
  CHECK(sim.timeline.intervals.empty());
}

TEST_CASE("a receive without a send, a send never received, and order errors are Errors") {
  auto schedule = make_schedule({ScheduleKind::one_f_one_b, 2, 2});
  auto no_send = schedule;  // drop stage 0's send of F1
  no_send[0].erase(
      std::find(no_send[0].begin(), no_send[0].end(), Action{Op::send_forward, 1, 0, 1}));
  CHECK_THROWS_WITH_AS(simulate(no_send),
                       "pipeline schedule: stage 1 action 4 (recv_forward of microbatch 1 chunk 0 "
                       "from stage 0) has no matching send_forward from stage 0 anywhere in the "
                       "schedule",
                       Error);
  auto no_recv = schedule;  // stage 0 sends F1 to itself
  std::find(no_recv[0].begin(), no_recv[0].end(), Action{Op::send_forward, 1, 0, 1})->peer = 0;
  CHECK_THROWS_AS(simulate(no_recv), Error);
  auto early = schedule;  // stage 1 runs F0 before receiving its input
  std::swap(early[1][0], early[1][1]);
  CHECK_THROWS_WITH_AS(simulate(early),
                       "pipeline schedule: stage 1 action 0 (forward of microbatch 0 chunk 0) "
                       "runs before its recv_forward",
                       Error);
  CHECK_NOTHROW(simulate(schedule));
}

// pp/schedule_traits.hpp: every schedule's record says what its simulation shows. Every valid
// spec with p <= 6, m <= 12 (v in {1, 2, 3} where the schedule takes it), F = B = W = 1 (a fused
// backward of 2): the bubble share, and the most activations a stage holds, in whole stages'
// worth (the simulator's microbatch-chunks over v; the first stage's, but ZB-V's last).
TEST_CASE("schedule traits: bubble and peak in flight as the simulator measures them") {
  for (ScheduleKind kind :
       {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::interleaved,
        ScheduleKind::zb_h1, ScheduleKind::zbv, ScheduleKind::forward_only})
    for (int p = 1; p <= 6; ++p)
      for (int m = 1; m <= 12; ++m)
        for (int v = 1; v <= 3; ++v) {
          const ScheduleTraits& t = traits(kind);
          const ScheduleSpec spec{kind, p, m, v};
          bool valid = true;
          try {
            validate(spec);
          } catch (const Error&) {
            valid = false;
          }
          if (!valid || (kind == ScheduleKind::forward_only && m < p)) continue;
          CAPTURE(name(spec));
          const Simulation sim = simulate(make_schedule(spec), {1, 2, 0, 0.5}, t.placement);
          CHECK(sim.bubble_share == doctest::Approx(t.bubble_share(p, m, v)).epsilon(1e-12));
          const int most = *std::max_element(sim.peak_in_flight.begin(), sim.peak_in_flight.end());
          CHECK(double(most) / v == doctest::Approx(t.peak_in_flight(p, m, v)).epsilon(1e-12));
        }
}

TEST_CASE("schedule traits: the table is in ScheduleKind's order, names parse back") {
  for (ScheduleKind kind : kTrainingSchedules) {
    CHECK(traits(kind).kind == kind);
    CHECK(traits(kind).trains);
    CHECK(parse_schedule(traits(kind).name) == kind);
  }
  CHECK(traits(ScheduleKind::forward_only).kind == ScheduleKind::forward_only);
  CHECK_FALSE(traits(ScheduleKind::forward_only).trains);
}
