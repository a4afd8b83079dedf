// trident/pp/in_flight.hpp: the activations each row of a pipeline timeline holds over time, the
// memory side of a schedule (GPipe holds every microbatch's before the first backward; 1F1B at
// most p - s on stage s, Narayanan et al. 2021 §2.2).
//
// A microbatch-chunk's activations are held from the start of its forward to the end of its last
// backward pass: B, or W where the backward is split (zero-bubble schedules; W reads the layers'
// inputs). The count is pp/simulate.hpp's (Simulation::peak_in_flight is its peak); a release and
// a start at the same instant count the release first, as one rank runs one pass at a time.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "timeline.hpp"

namespace trident::pp {

struct HeldStep {
  double t;  // from this time on
  int held;  // microbatch-chunks whose activations the row holds
};

// One staircase per row of `timeline`, starting at 0 held.
inline std::vector<std::vector<HeldStep>> activations_in_flight(const Timeline& timeline) {
  using Key = std::tuple<int, int, int>;  // row, microbatch, chunk
  auto key = [](const Interval& s) { return Key{s.rank, s.microbatch, s.chunk}; };
  std::set<Key> split;  // has a W pass: W releases, not B
  for (const Interval& s : timeline.intervals)
    if (s.kind == IntervalKind::weight) split.insert(key(s));
  std::map<Key, std::pair<double, double>> held;  // first forward's begin, last release's end
  for (const Interval& s : timeline.intervals) {
    const bool starts = s.kind == IntervalKind::forward,
               releases =
                   s.kind == (split.count(key(s)) ? IntervalKind::weight : IntervalKind::backward);
    if (!starts && !releases) continue;
    auto [it, fresh] = held.try_emplace(key(s), s.begin, s.end);
    if (starts) it->second.first = fresh ? s.begin : std::min(it->second.first, s.begin);
    if (releases) it->second.second = std::max(it->second.second, s.end);
  }
  std::vector<std::vector<std::pair<double, int>>> events(std::size_t(timeline.ranks));
  for (const auto& [key, span] : held) {
    auto& row = events[std::size_t(std::get<0>(key))];
    row.push_back({span.first, +1});
    row.push_back({span.second, -1});
  }
  std::vector<std::vector<HeldStep>> rows(events.size());
  for (std::size_t r = 0; r < events.size(); ++r) {
    std::sort(events[r].begin(), events[r].end());  // at a tie, -1 before +1
    int n = 0;
    rows[r].push_back({timeline.start(), 0});
    for (const auto& [t, change] : events[r]) {
      n += change;
      if (rows[r].back().t == t)
        rows[r].back().held = n;
      else
        rows[r].push_back({t, n});
    }
  }
  return rows;
}

inline int peak_held(const std::vector<HeldStep>& row) {
  int most = 0;
  for (const HeldStep& s : row) most = std::max(most, s.held);
  return most;
}

}  // namespace trident::pp
