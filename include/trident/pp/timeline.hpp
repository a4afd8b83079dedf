// trident/pp/timeline.hpp: what each pipeline rank did when, simulated or measured.
//
// A Timeline is a list of intervals (rank, kind, microbatch, chunk, begin, end). The simulator
// (simulate.hpp) produces one in cost units; the executor can record one in seconds. Both are
// drawn by svg.hpp and exported by io/chrome_trace.hpp. The pipeline bubble (Huang et al. 2019)
// is the time ranks spend not computing: bubble_share = idle time summed over ranks /
// (ranks * makespan), where a rank's idle time is makespan minus its forward + backward (B and W)
// time.
#pragma once

#include <algorithm>
#include <vector>

namespace trident::pp {

// backward: the fused backward, or zero-bubble's B (input gradient); weight: zero-bubble's W.
enum class IntervalKind { forward, backward, send, recv, idle, weight };

inline const char* to_string(IntervalKind kind) {
  switch (kind) {
    case IntervalKind::forward:
      return "forward";
    case IntervalKind::backward:
      return "backward";
    case IntervalKind::send:
      return "send";
    case IntervalKind::recv:
      return "recv";
    case IntervalKind::idle:
      return "idle";
    case IntervalKind::weight:
      return "weight";
  }
  return "?";
}

inline bool is_compute(IntervalKind kind) {
  return kind == IntervalKind::forward || kind == IntervalKind::backward ||
         kind == IntervalKind::weight;
}

struct Interval {
  int rank;
  IntervalKind kind;
  int microbatch;
  int chunk;
  double begin, end;
};

struct Timeline {
  int ranks = 0;
  std::vector<Interval> intervals;

  double start() const {
    double t = intervals.empty() ? 0 : intervals.front().begin;
    for (const Interval& s : intervals) t = std::min(t, s.begin);
    return t;
  }
  // From the earliest begin to the latest end (a simulation starts at 0).
  double makespan() const {
    double end = start();
    for (const Interval& s : intervals) end = std::max(end, s.end);
    return end - start();
  }
  double bubble_share() const {
    const double total = makespan() * ranks;
    if (total <= 0) return 0;
    double compute = 0;
    for (const Interval& s : intervals)
      if (is_compute(s.kind)) compute += s.end - s.begin;
    return (total - compute) / total;
  }
};

}  // namespace trident::pp
