// trident/train/waits_text.hpp: the run report's "who made whom wait" (train/waits.hpp), per
// rank: the step's time as compute, exposed communication and waiting, and in each group the
// rank it waited for most.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "wait_attribution.hpp"

namespace trident {

inline void print_waits(const WaitAttribution& waits) {
  if (!waits.enabled() || waits.steps() == 0) return;
  const std::vector<RankWaits>& w = waits.total();
  const double n = waits.steps(), ms = 1e3 / n;
  std::printf(
      "\nwho made whom wait (train/waits.hpp), ms per step over %d measured steps: each call's "
      "wait\n  until the rank that arrived last (a collective's last member, a message's other "
      "end),\n  the rest of its time exposed communication; other: the step's time in none; "
      "stamps\n  gathered and attributed after each step in %.2f ms (rank 0, not in the step)\n"
      " rank     step  compute  exposed  waiting    other  waited for most (ms per step)\n",
      waits.steps(), waits.seconds() * ms);
  const std::size_t ranks = w.size();
  for (std::size_t r = 0; r < ranks; ++r) {
    const RankWaits& x = w[r];
    std::string most;
    for (int g = 0; g < kWaitGroups; ++g) {
      std::size_t culprit = 0;
      for (std::size_t c = 1; c < ranks; ++c)
        if (x.waited_for[g * ranks + c] > x.waited_for[g * ranks + culprit]) culprit = c;
      const double t = x.waited_for[g * ranks + culprit] * ms;
      if (t < 0.005) continue;
      char part[64];
      std::snprintf(part, sizeof part, "%s%s: rank %zu (%.2f)", most.empty() ? "" : ", ",
                    wait_group_name(g), culprit, t);
      most += part;
    }
    std::printf("%5zu %8.2f %8.2f %8.2f %8.2f %8.2f  %s\n", r, x.step * ms, x.compute * ms,
                x.exposed * ms, x.waiting * ms, x.other() * ms, most.empty() ? "-" : most.c_str());
  }
}

}  // namespace trident
