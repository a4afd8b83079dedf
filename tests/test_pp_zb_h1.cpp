// pp/ ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism") as data: its makespan and
// peaks against the paper's, the lists of its Figure 3, and the simulator's replay of unequal
// stages. No MPI communication: runs on one rank.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <trident/plan/formulas.hpp>
#include <trident/pp/schedule.hpp>
#include <trident/pp/simulate.hpp>

#include "pp_specs.hpp"

using namespace trident;
using namespace trident::pp;
using namespace pp_test;

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
      CHECK(sim.bubble_share ==
            doctest::Approx(pp::zb_h1_bubble_share(p, m, 1, B, W)).epsilon(1e-12));
    }
    const double ideal = 3.0 * m;  // F = B = W = 1
    const Simulation zb = simulate(make_schedule(spec), {1, 2, 0, 0.5});
    const Simulation one =
        simulate(make_schedule({ScheduleKind::one_f_one_b, p, m, 1}), {1, 2, 0, 0.5});
    CHECK(zb.makespan - ideal == doctest::Approx((one.makespan - ideal) / 3));
    CHECK(zb.bubble_share == doctest::Approx(pp::zb_h1_bubble_share(p, m)).epsilon(1e-12));
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
    CHECK(b.bubble_share == doctest::Approx(a.bubble_share).epsilon(1e-12));
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
  CHECK(zb.bubble_share == doctest::Approx(0.25).epsilon(1e-12));
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
