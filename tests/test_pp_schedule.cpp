// pp/ schedules as data: structure of GPipe, 1F1B, interleaved 1F1B and ZB-H1, the simulator
// against the papers' bubble formulas and activation counts, deadlock and mismatch detection,
// validate()'s messages, and the SVG and Chrome trace exports. No MPI communication: runs on one
// rank.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <trident/io/chrome_trace.hpp>
#include <trident/plan/formulas.hpp>
#include <trident/pp/schedule.hpp>
#include <trident/pp/simulate.hpp>
#include <trident/pp/svg.hpp>

using namespace trident;
using namespace trident::pp;

namespace {

// Every valid spec with p in 1..8, m in 1..16 (interleaved: v in {2, 3}, m a multiple of p;
// ZB-H1: m >= p).
std::vector<ScheduleSpec> all_specs() {
  std::vector<ScheduleSpec> specs;
  for (int p = 1; p <= 8; ++p)
    for (int m = 1; m <= 16; ++m) {
      specs.push_back({ScheduleKind::gpipe, p, m, 1});
      specs.push_back({ScheduleKind::one_f_one_b, p, m, 1});
      for (int v : {2, 3})
        if (m % p == 0) specs.push_back({ScheduleKind::interleaved, p, m, v});
      if (m >= p) specs.push_back({ScheduleKind::zb_h1, p, m, 1});
    }
  return specs;
}

std::string name(const ScheduleSpec& s) {
  return std::string(to_string(s.kind)) + " p=" + std::to_string(s.stages) +
         " m=" + std::to_string(s.microbatches) + " v=" + std::to_string(s.chunks);
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

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
      CHECK(sim.bubble_fraction == doctest::Approx(plan::bubble_share(p, m)).epsilon(1e-12));
      CHECK(sim.makespan == doctest::Approx((m + p - 1) * (1 + backward)).epsilon(1e-12));
      CHECK(sim.timeline.bubble_fraction() == sim.bubble_fraction);
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
      CHECK((sim.makespan - ideal) / ideal == doctest::Approx(plan::bubble_fraction(p, m, v)));
      CHECK(sim.bubble_fraction == doctest::Approx(plan::bubble_share(p, m, v)));
    }
  }
  // and against 1F1B on the same pipeline: p = 4, m = 8, v = 2 halves the bubble time
  const double plain = simulate(make_schedule({ScheduleKind::one_f_one_b, 4, 8})).makespan - 16;
  const double inter = simulate(make_schedule({ScheduleKind::interleaved, 4, 8, 2})).makespan - 16;
  CHECK(inter == doctest::Approx(plain / 2));
}

// Qi et al. 2023 §3.1: ZB-H1's bubble is (p-1)(F + B - W) where 1F1B's is (p-1)(F + B + W);
// with F = B = W (their Figure 3) a third of it. Checked also for W < B; W > B is not the
// handcrafted schedule's regime.
TEST_CASE("ZB-H1: makespan m (F + B + W) + (p-1)(F + B - W), a third of 1F1B's bubble") {
  for (const ScheduleSpec& spec : all_specs()) {
    if (spec.kind != ScheduleKind::zb_h1) continue;
    CAPTURE(name(spec));
    const int p = spec.stages, m = spec.microbatches;
    for (double w_fraction : {0.5, 0.4, 0.3}) {
      const Costs costs{1, 2, 0, w_fraction};
      const double B = 2 * (1 - w_fraction), W = 2 * w_fraction;
      const Simulation sim = simulate(make_schedule(spec), costs);
      CHECK(sim.makespan == doctest::Approx(m * 3 + (p - 1) * (1 + B - W)).epsilon(1e-12));
    }
    const double ideal = 3.0 * m;  // F = B = W = 1
    const Simulation zb = simulate(make_schedule(spec), {1, 2, 0, 0.5});
    const Simulation one =
        simulate(make_schedule({ScheduleKind::one_f_one_b, p, m, 1}), {1, 2, 0, 0.5});
    CHECK(zb.makespan - ideal == doctest::Approx((one.makespan - ideal) / 3));
    CHECK(zb.bubble_fraction == doctest::Approx(plan::zb_h1_bubble_share(p, m)).epsilon(1e-12));
  }
}

// ZB-H1 keeps activations until W: every stage holds at most p microbatches, 1F1B's peak (its
// stage 0); until B, exactly 1F1B's min(m, p - s), as F and B follow 1F1B's order.
TEST_CASE("ZB-H1 peak in-flight: 1F1B's until B on every stage, 1F1B's peak p until W") {
  for (const ScheduleSpec& spec : all_specs()) {
    if (spec.kind != ScheduleKind::zb_h1) continue;
    CAPTURE(name(spec));
    const Simulation zb = simulate(make_schedule(spec));
    const Simulation one =
        simulate(make_schedule({ScheduleKind::one_f_one_b, spec.stages, spec.microbatches, 1}));
    CHECK(zb.peak_before_input_gradient == one.peak_in_flight);
    const int one_peak = *std::max_element(one.peak_in_flight.begin(), one.peak_in_flight.end());
    for (int held : zb.peak_in_flight) CHECK(held == one_peak);
  }
}

// A replay (Costs::stage): each stage runs its passes in its own measured times. The uniform
// costs given to every stage change nothing; unequal stages, worked by hand for p = 2, m = 2.
TEST_CASE("a replay with each stage's own pass times: uniform ones change nothing; by hand") {
  for (const ScheduleSpec& spec : all_specs()) {
    CAPTURE(name(spec));
    const Costs uniform{1, 2, 0.25, 0.4};
    Costs per_stage = uniform;
    per_stage.stage.assign(spec.stages, PassTimes{1, 2, 1.2, 0.8});
    const Simulation a = simulate(make_schedule(spec), uniform);
    const Simulation b = simulate(make_schedule(spec), per_stage);
    CHECK(b.makespan == doctest::Approx(a.makespan).epsilon(1e-12));
    CHECK(b.bubble_fraction == doctest::Approx(a.bubble_fraction).epsilon(1e-12));
  }
  // 1F1B, stage 0 (F 1, backward 2) and the slower stage 1 (1.5, 3): stage 1 runs F0 [1, 2.5],
  // B0 [2.5, 5.5], F1 [5.5, 7], B1 [7, 10]; stage 0 then B1 [10, 12].
  Costs costs;
  costs.stage = {PassTimes{1, 2, 0, 0}, PassTimes{1.5, 3, 0, 0}};
  CHECK(simulate(make_schedule({ScheduleKind::one_f_one_b, 2, 2}), costs).makespan == 12);
  // ZB-H1, stage 0 (F, B, W 1 each), stage 1 (F 1.5, B 2, W 1): stage 1 runs F0 [1, 2.5],
  // B0 [2.5, 4.5], F1 [4.5, 6], B1 [6, 8], W0, W1 [8, 10]; stage 0 B1 [8, 9], W1 [9, 10]:
  // busy 6 + 9 of 2 x 10.
  costs.stage = {PassTimes{1, 0, 1, 1}, PassTimes{1.5, 0, 2, 1}};
  const Simulation zb = simulate(make_schedule({ScheduleKind::zb_h1, 2, 2}), costs);
  CHECK(zb.makespan == 10);
  CHECK(zb.bubble_fraction == doctest::Approx(0.25).epsilon(1e-12));
  costs.stage.pop_back();
  CHECK_THROWS_WITH_AS(simulate(make_schedule({ScheduleKind::zb_h1, 2, 2}), costs),
                       "pipeline schedule: pass times given for 1 stage(s), the schedule has 2",
                       Error);
}

TEST_CASE("ZB-H1 for p = 4, m = 8: the lists of Qi et al. 2023, Figure 3") {
  const auto schedule = make_schedule({ScheduleKind::zb_h1, 4, 8});
  const std::vector<std::string> expected = {
      "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7",
      "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7",
      "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 W6 W7",
      "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7"};
  for (int s = 0; s < 4; ++s) {
    std::string line;
    for (const Action& a : schedule[s])
      if (is_compute(a.op)) line += (line.empty() ? "" : " ") + to_string(a);
    CHECK(line == expected[s]);
  }
  CHECK_THROWS_WITH_AS(validate({ScheduleKind::zb_h1, 4, 3}),
                       "pipeline schedule zb-h1: needs at least as many microbatches as stages, "
                       "m >= p (Qi et al. 2023 §3.1): got 3 microbatches for 4 stages",
                       Error);
  CHECK_THROWS_AS(validate({ScheduleKind::zb_h1, 2, 4, 2}), Error);
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

TEST_CASE("Timeline: makespan and bubble fraction of a measured timeline") {
  Timeline t;
  t.ranks = 2;
  t.intervals = {{0, IntervalKind::forward, 0, 0, 10.0, 11.0},
                 {0, IntervalKind::recv, 0, 0, 11.0, 12.0},
                 {1, IntervalKind::backward, 0, 0, 12.0, 14.0}};
  CHECK(t.makespan() == doctest::Approx(4.0));
  // idle: rank 0 4 - 1 = 3, rank 1 4 - 2 = 2; (3 + 2) / (2 * 4)
  CHECK(t.bubble_fraction() == doctest::Approx(5.0 / 8));
  CHECK(Timeline{}.bubble_fraction() == 0);
}

TEST_CASE("timeline_svg: one numbered box per compute, chunk hatching, escaped title, an axis") {
  const Simulation sim = simulate(make_schedule({ScheduleKind::interleaved, 2, 4, 2}));
  const std::string svg = timeline_svg(sim.timeline, "p=2 & m=4 <interleaved>");
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(count(svg, "<g class=\"forward\">") == 2 * 4 * 2);
  CHECK(count(svg, "<g class=\"backward\">") == 2 * 4 * 2);
  CHECK(count(svg, "fill=\"url(#chunk1)\"") == 2 * 4 * 2 + 1);  // chunk-1 boxes + legend
  CHECK(svg.find("p=2 &amp; m=4 &lt;interleaved&gt;") != std::string::npos);
  CHECK(svg.find("<title>stage 1 backward microbatch 3 chunk 0") != std::string::npos);
  CHECK(svg.find(">stage 1</text>") != std::string::npos);
  const std::string ranks = timeline_svg(sim.timeline, "t", "rank");  // a run's rows are ranks
  CHECK(ranks.find(">rank 1</text>") != std::string::npos);
  CHECK(ranks.find(">stage 1</text>") == std::string::npos);
  CHECK(svg.find(">time</text>") != std::string::npos);
  CHECK(count(svg, "<g") == count(svg, "</g>"));
  CHECK_THROWS_WITH_AS(write_timeline_svg("/nonexistent-dir/t.svg", sim.timeline, "t"),
                       "cannot write the timeline SVG '/nonexistent-dir/t.svg'", Error);
}

TEST_CASE("chrome_trace: complete events in microseconds, one named track per rank") {
  Timeline t;
  t.ranks = 2;
  t.intervals = {{0, IntervalKind::forward, 3, 0, 1.0, 2.5},
                 {1, IntervalKind::backward, 3, 1, 2.5, 3.0}};
  const nlohmann::json trace = chrome_trace(t, {"pp0", "pp1"});
  const auto& events = trace.at("traceEvents");
  std::vector<nlohmann::json> complete, names;
  for (const auto& e : events) {
    if (e.at("ph") == "X") complete.push_back(e);
    if (e.at("ph") == "M" && e.at("name") == "thread_name") names.push_back(e);
  }
  REQUIRE(complete.size() == 2);
  CHECK(complete[0].at("name") == "F3");
  CHECK(complete[0].at("ts").get<double>() == doctest::Approx(1e6));
  CHECK(complete[0].at("dur").get<double>() == doctest::Approx(1.5e6));
  CHECK(complete[0].at("tid") == 0);
  CHECK(complete[1].at("name") == "B3c1");
  CHECK(complete[1].at("tid") == 1);
  CHECK(complete[1].at("cat") == "backward");
  REQUIRE(names.size() == 2);
  CHECK(names[1].at("tid") == 1);
  CHECK(names[1].at("args").at("name") == "pp1");
  CHECK(chrome_trace(t, {}).at("traceEvents")[1].at("args").at("name") == "stage 0");
  CHECK_THROWS_WITH_AS(chrome_trace(t, {"only one"}), "chrome_trace: 1 rank names for 2 ranks",
                       Error);
  CHECK_THROWS_WITH_AS(write_chrome_trace("/nonexistent-dir/trace.json", t, {}),
                       "cannot write the Chrome trace '/nonexistent-dir/trace.json'", Error);
}

TEST_CASE("ZB-H1's W passes: their own boxes and shade in the SVG, W<n> in the Chrome trace") {
  const Simulation sim = simulate(make_schedule({ScheduleKind::zb_h1, 4, 8}), {1, 2, 0, 0.5});
  const std::string svg = timeline_svg(sim.timeline, "zb-h1");
  CHECK(count(svg, "<g class=\"forward\">") == 4 * 8);
  CHECK(count(svg, "<g class=\"backward\">") == 4 * 8);
  CHECK(count(svg, "<g class=\"weight\">") == 4 * 8);
  CHECK(count(svg, "W: weight gradient") == 1);
  // microbatch 3's three boxes in three different colours
  const std::string f = detail::box_colour(3, IntervalKind::forward),
                    b = detail::box_colour(3, IntervalKind::backward),
                    w = detail::box_colour(3, IntervalKind::weight);
  CHECK(f != w);
  CHECK(b != w);
  CHECK(svg.find("fill=\"" + w + "\"") != std::string::npos);
  int weights = 0;
  const nlohmann::json trace = chrome_trace(sim.timeline, {});
  for (const auto& e : trace.at("traceEvents"))
    if (e.value("cat", "") == "weight") weights += e.at("name").get<std::string>()[0] == 'W';
  CHECK(weights == 4 * 8);
}
