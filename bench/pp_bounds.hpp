// bench/pp_bounds.hpp: what a pipeline's measured stage times allow, for bench_pp's zero-bubble
// goal lines (pp_zero_bubble.hpp): the least makespan any schedule could reach, the 1F1B and
// ZB-H1 lists replayed by pp/simulate.hpp with the measured per-pass times (or with equal
// stages), and Qi et al. 2023's ZB-H1 formula with them.
#pragma once

#include <algorithm>
#include <vector>

#include <trident/plan/formulas.hpp>
#include <trident/trident.hpp>

namespace bench {

// The least makespan any schedule could reach with these busy times: rank s starts no earlier
// than the forwards of the ranks before it on the first microbatch's way (measured: microbatch
// 0's on chunk 0), then computes for its busy time; sends and receives taken as free.
// times[2 s], times[2 s + 1]: rank s's first forward and busy time.
inline double least_makespan(const std::vector<double>& times) {
  double start = 0, least = 0;
  for (std::size_t s = 0; 2 * s < times.size(); ++s) {
    least = std::max(least, start + times[2 * s + 1]);
    start += times[2 * s];
  }
  return least;
}

// The 1F1B and ZB-H1 lists (p stages, m microbatches) replayed by pp/simulate.hpp, sends free,
// with each rank's measured per-pass times (`times`: per rank, 1F1B's then ZB-H1's StageTimes,
// ms per step) or, `equal`, every stage given the ranks' mean: their spans bubbles into `out`.
inline void replay(const std::vector<double>& times, int p, int m, bool equal, double out[2]) {
  pp::Costs one, zb;
  for (int r = 0; r < p; ++r) {
    const double* t = &times[15 * r];  // 1F1B: F, fused backward, -; ZB-H1 (t + 5): F, B, W
    one.stage.push_back({t[0] / m, t[1] / m, 0, 0});
    zb.stage.push_back({t[5] / m, 0, t[6] / m, t[7] / m});
  }
  if (equal)
    for (pp::Costs* c : {&one, &zb}) {
      pp::PassTimes mean{};
      for (const pp::PassTimes& t : c->stage) {
        mean.forward += t.forward / p;
        mean.backward += t.backward / p;
        mean.backward_input += t.backward_input / p;
        mean.weight += t.weight / p;
      }
      c->stage.assign(p, mean);
    }
  out[0] = pp::simulate(pp::make_schedule({pp::ScheduleKind::one_f_one_b, p, m}), one).bubble_share;
  out[1] = pp::simulate(pp::make_schedule({pp::ScheduleKind::zb_h1, p, m}), zb).bubble_share;
}

// Qi et al. 2023 §3.1 with the ranks' mean per-pass times (pp::zb_h1_bubble_share), over
// 1F1B's (p-1)/(m + p-1): ZB-H1's spans bubble over 1F1B's on equal stages.
inline double qi_ratio(const std::vector<double>& times, int p, int m) {
  double F = 0, B = 0, W = 0;
  for (int r = 0; r < p; ++r) {
    // sums over the ranks: the ratio is the means'
    F += times[15 * r + 5];
    B += times[15 * r + 6];
    W += times[15 * r + 7];
  }
  return pp::zb_h1_bubble_share(p, m, F, B, W) / pp::bubble_share(p, m);
}

}  // namespace bench
