// pp/ ZB-V (schedule_zbv.hpp) as data: the V placement, every (microbatch, chunk) once with its
// receives and sends between the right ranks, no deadlock, activations within 1F1B's peak, the
// bubble next to its floor and to ZB-H1's and 1F1B's, validate()'s messages, and forward-only
// in the V. No MPI communication: runs on one rank.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <trident/plan/formulas.hpp>
#include <trident/pp/schedule.hpp>
#include <trident/pp/simulate.hpp>

using namespace trident;
using namespace trident::pp;

namespace {

// Every valid ZB-V spec with p in 1..8, m in p..16.
std::vector<ScheduleSpec> zbv_specs() {
  std::vector<ScheduleSpec> specs;
  for (int p = 1; p <= 8; ++p)
    for (int m = p; m <= 16; ++m) specs.push_back({ScheduleKind::zbv, p, m, 2});
  return specs;
}

std::string zbv_name(const ScheduleSpec& s) {
  return "zbv p=" + std::to_string(s.stages) + " m=" + std::to_string(s.microbatches);
}

Simulation simulate_zbv(const ScheduleSpec& spec, Costs costs = {}) {
  return simulate(make_schedule(spec), costs, ChunkPlacement::v_shape);
}

}  // namespace

TEST_CASE("the V placement: rank s holds virtual stages s and 2p-1-s; looped: c p + s") {
  const ChunkMap v{ChunkPlacement::v_shape, 4, 2}, looped{ChunkPlacement::looped, 4, 2};
  const std::vector<int> v_ranks = {0, 1, 2, 3, 3, 2, 1, 0},
                         looped_ranks = {0, 1, 2, 3, 0, 1, 2, 3};
  for (int g = 0; g < 8; ++g) {
    CHECK(v.rank(g) == v_ranks[g]);
    CHECK(looped.rank(g) == looped_ranks[g]);
    CHECK(v.virtual_stage(v.chunk(g), v.rank(g)) == g);
    CHECK(looped.virtual_stage(looped.chunk(g), looped.rank(g)) == g);
  }
  CHECK(v.last_rank() == 0);
  CHECK(looped.last_rank() == 3);
  CHECK(chunk_map({ScheduleKind::zbv, 4, 8, 2}).placement == ChunkPlacement::v_shape);
  CHECK(chunk_map({ScheduleKind::interleaved, 4, 8, 2}).placement == ChunkPlacement::looped);
  CHECK(chunk_map({ScheduleKind::forward_only, 4, 8, 2, ChunkPlacement::v_shape}).placement ==
        ChunkPlacement::v_shape);
  CHECK(parse_schedule("zbv") == ScheduleKind::zbv);
}

TEST_CASE("ZB-V: each (microbatch, chunk) F, B, W once; receives and sends with the V's ranks") {
  for (const ScheduleSpec& spec : zbv_specs()) {
    CAPTURE(zbv_name(spec));
    const auto schedule = make_schedule(spec);
    const ChunkMap map = chunk_map(spec);
    const int p = spec.stages, last = 2 * p - 1;
    for (int s = 0; s < p; ++s) {
      std::map<std::tuple<Op, int, int>, int> seen;
      for (const Action& a : schedule[s]) {
        ++seen[{a.op, a.microbatch, a.chunk}];
        const int g = map.virtual_stage(a.chunk, s);
        if (a.op == Op::recv_forward || a.op == Op::send_backward) CHECK(a.peer == map.rank(g - 1));
        if (a.op == Op::send_forward || a.op == Op::recv_backward) CHECK(a.peer == map.rank(g + 1));
        CHECK(a.op != Op::backward);  // always split into B and W
      }
      for (int mb = 0; mb < spec.microbatches; ++mb)
        for (int c = 0; c < 2; ++c) {
          const int g = map.virtual_stage(c, s);
          CHECK(seen[{Op::forward, mb, c}] == 1);
          CHECK(seen[{Op::backward_input, mb, c}] == 1);
          CHECK(seen[{Op::backward_weight, mb, c}] == 1);
          CHECK(seen[{Op::recv_forward, mb, c}] == (g > 0));
          CHECK(seen[{Op::send_forward, mb, c}] == (g < last));
        }
    }
    // the V's bottom: stage p-1 hands chunk 0's output to its own chunk 1
    CHECK(std::count(schedule[p - 1].begin(), schedule[p - 1].end(),
                     Action{Op::send_forward, 0, 0, p - 1}) == 1);
  }
}

TEST_CASE("ZB-V: no deadlock for p in 1..8, m in p..16, also with p2p cost") {
  for (const ScheduleSpec& spec : zbv_specs()) {
    CAPTURE(zbv_name(spec));
    for (double p2p : {0.0, 0.3}) {
      const Simulation sim = simulate_zbv(spec, {1, 2, p2p});
      CHECK_FALSE(sim.deadlock);
      int computes = 0;
      for (const Interval& s : sim.timeline.intervals) computes += is_compute(s.kind);
      CHECK(computes == 3 * spec.stages * spec.microbatches * 2);  // F, B, W of 2 chunks
    }
  }
  // the lists only work with the V: read as looped, their messages do not match
  CHECK_THROWS_AS(simulate(make_schedule({ScheduleKind::zbv, 2, 4, 2})), Error);
}

// A chunk holds half a stage's layers: 2 microbatch-chunks weigh one whole-stage microbatch.
TEST_CASE("ZB-V activations: every stage holds at most 1F1B's peak, min(m, p) whole stages") {
  for (const ScheduleSpec& spec : zbv_specs()) {
    CAPTURE(zbv_name(spec));
    const Simulation zbv = simulate_zbv(spec);
    const Simulation one =
        simulate(make_schedule({ScheduleKind::one_f_one_b, spec.stages, spec.microbatches, 1}));
    const int one_peak = *std::max_element(one.peak_in_flight.begin(), one.peak_in_flight.end());
    CHECK(one_peak == std::min(spec.microbatches, spec.stages));
    for (int held : zbv.peak_in_flight) CHECK(held <= 2 * one_peak);
    // stage 0: its warm-up's min(m, 2p-1) forwards of chunk 0, then chunk 1's first; 2p (1F1B's
    // peak) once the V is full
    CHECK(zbv.peak_in_flight[0] == std::min(spec.microbatches, 2 * spec.stages - 1) + 1);
  }
}

// Equal F, B, W (forward 1, backward 2, W half of it): idle per stage max((p-1)/2, 2p-1-m) F,
// the floor (p-1) F/2 once m >= (3p-1)/2; below ZB-H1's (p-1)(F + B - W) = (p-1) F for p > 1.
TEST_CASE("ZB-V bubble with equal F, B, W: max((p-1)/2, 2p-1-m) F, under ZB-H1's (p-1) F") {
  for (const ScheduleSpec& spec : zbv_specs()) {
    CAPTURE(zbv_name(spec));
    const int p = spec.stages, m = spec.microbatches;
    const Simulation zbv = simulate_zbv(spec, {1, 2, 0, 0.5});
    const double idle = zbv.makespan - 3.0 * m;
    CHECK(idle == doctest::Approx(std::max((p - 1) / 2.0, 2.0 * p - 1 - m)));
    CHECK(idle >= (p - 1) / 2.0 - 1e-12);  // the floor: microbatch 0 going down the V
    if (m >= 2 * p - 1) CHECK(idle == doctest::Approx((p - 1) / 2.0));
    const Simulation zb = simulate(make_schedule({ScheduleKind::zb_h1, p, m, 1}), {1, 2, 0, 0.5});
    CHECK(zbv.makespan <= zb.makespan + 1e-12);
    if (p > 1 && m >= 2 * p - 1) CHECK(zbv.makespan < zb.makespan);
    CHECK(zbv.bubble_share == doctest::Approx(pp::zbv_bubble_share(p, m)).epsilon(1e-12));
  }
}

TEST_CASE("ZB-V: validate() names the constraint") {
  CHECK_THROWS_WITH_AS(validate({ScheduleKind::zbv, 4, 3, 2}),
                       "pipeline schedule zbv: needs at least as many microbatches as stages, "
                       "m >= p (Qi et al. 2024): got 3 microbatches for 4 stages",
                       Error);
  CHECK_THROWS_WITH_AS(validate({ScheduleKind::zbv, 2, 4, 1}),
                       "pipeline schedule zbv: takes 2 model chunks per stage, placed in a V (got "
                       "chunks = 1)",
                       Error);
  CHECK_THROWS_AS(validate({ScheduleKind::zbv, 2, 4, 3}), Error);
  CHECK_THROWS_WITH_AS(validate({ScheduleKind::one_f_one_b, 2, 4, 1, ChunkPlacement::v_shape}),
                       "pipeline schedule 1f1b: places its chunks looped (the V-shape is zbv's)",
                       Error);
  CHECK_NOTHROW(validate({ScheduleKind::zbv, 4, 4, 2}));
}

TEST_CASE("forward-only in the V (evaluation of a ZB-V run): no deadlock, each forward once") {
  for (int p = 1; p <= 8; ++p)
    for (int m = 1; m <= 16; ++m) {
      CAPTURE(p);
      CAPTURE(m);
      const Simulation sim =
          simulate(make_schedule({ScheduleKind::forward_only, p, m, 2, ChunkPlacement::v_shape}),
                   {}, ChunkPlacement::v_shape);
      CHECK_FALSE(sim.deadlock);
      CHECK(static_cast<int>(sim.timeline.intervals.size()) == 2 * p * m);
    }
}
