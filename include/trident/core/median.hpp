// trident/core/median.hpp: the median of a sample (the mean of the middle two for an even count;
// 0 for none), the one every timing and every spike check takes.
#pragma once

#include <algorithm>
#include <vector>

namespace trident {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + m, v.end());
  if (v.size() % 2) return v[m];
  return (*std::max_element(v.begin(), v.begin() + m) + v[m]) / 2;
}

}  // namespace trident
