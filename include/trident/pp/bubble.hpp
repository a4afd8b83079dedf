// trident/pp/bubble.hpp: the pipeline bubble of each schedule, as the papers write it. Two
// measures of the same idle time, named apart:
//  - bubble_over_ideal: a stage's idle time over its work, (p-1)/m for a flush (Narayanan et al.
//    2021 §2.2.1, the "bubble time fraction"): what the planner adds to the compute time;
//  - bubble_share: idle over the whole step, idle / (work + idle), (p-1)/(m+p-1) for a flush
//    (GPipe, Huang et al. 2019): what a timeline measures (timeline.hpp) and the report prints.
// Every schedule's pair comes from its traits record (schedule_traits.hpp); the simulator
// (simulate.hpp) reproduces each formula exactly with equal F, B and W (tests/test_pp_*.cpp).
#pragma once

#include <algorithm>

namespace trident::pp {

// idle / (work + idle) from idle / work.
inline double share_of_step(double idle_over_work) {
  return idle_over_work / (1 + idle_over_work);
}

// GPipe and 1F1B (Narayanan et al. 2021, §2.2.1): a flush idles (p-1) microbatch slots of every
// stage, (p-1)/m of the ideal time; the interleaved schedule with v model chunks per rank
// shrinks it to (p-1)/(v m) (§2.2.2).
inline double bubble_over_ideal(int pp, int microbatches, int virtual_stages = 1) {
  return static_cast<double>(pp - 1) / (static_cast<double>(virtual_stages) * microbatches);
}
// The same as a share of the step: (p-1)/(v m + p-1).
inline double bubble_share(int pp, int microbatches, int virtual_stages = 1) {
  return share_of_step(bubble_over_ideal(pp, microbatches, virtual_stages));
}

// ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", §3.1) on equal stages: idle
// (p-1)(F + B - W) next to m (F + B + W) of work per stage; with equal F, B and W (the default)
// (p-1)/(3m) of the ideal time, a share of (p-1)/(3m + p-1).
inline double zb_h1_bubble_over_ideal(int pp, int microbatches, double F = 1, double B = 1,
                                      double W = 1) {
  return (pp - 1) * (F + B - W) / (microbatches * (F + B + W));
}
inline double zb_h1_bubble_share(int pp, int microbatches, double F = 1, double B = 1,
                                 double W = 1) {
  return share_of_step(zb_h1_bubble_over_ideal(pp, microbatches, F, B, W));
}

// ZB-V (schedule_zbv.hpp) with equal F, B and W: Qi et al. 2024 give a bubble of 0; what no
// schedule can avoid is the last rank's wait for the first microbatch to go down p - 1 chunks of
// half a stage, (p-1) F/2, and trident's ZB-V idles exactly max((p-1)/2, 2p-1-m) F per rank
// (the second term: too few microbatches to fill the V; the simulator's figure, checked for
// p <= 8, m <= 16 in tests/test_pp_zbv.cpp), next to 3 m F of work.
inline double zbv_bubble_over_ideal(int pp, int microbatches) {
  return std::max((pp - 1) / 2.0, 2.0 * pp - 1 - microbatches) / (3.0 * microbatches);
}
inline double zbv_bubble_share(int pp, int microbatches) {
  return share_of_step(zbv_bubble_over_ideal(pp, microbatches));
}

}  // namespace trident::pp
