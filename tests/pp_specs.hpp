// tests/pp_specs.hpp: the schedule specs the pp/ tests sweep, and their names in messages.
#pragma once

#include <string>
#include <trident/pp/schedule.hpp>
#include <vector>

namespace pp_test {

using trident::pp::ScheduleKind;
using trident::pp::ScheduleSpec;

// Every valid spec with p in 1..8, m in 1..16 (interleaved: v in {2, 3}, m a multiple of p;
// ZB-H1: m >= p).
inline std::vector<ScheduleSpec> all_specs() {
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

inline std::string name(const ScheduleSpec& s) {
  return std::string(to_string(s.kind)) + " p=" + std::to_string(s.stages) +
         " m=" + std::to_string(s.microbatches) + " v=" + std::to_string(s.chunks);
}

}  // namespace pp_test
