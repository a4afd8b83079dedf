// trident/pp/timeline.hpp: what each pipeline rank did when, simulated or measured.
//
// A Timeline is a list of spans (rank, kind, microbatch, chunk, begin, end). The simulator
// (simulate.hpp) produces one in cost units; the executor can record one in seconds. Both are
// drawn by svg.hpp and exported by io/chrome_trace.hpp. The pipeline bubble (Huang et al. 2019)
// is the time ranks spend not computing: bubble_fraction = idle time summed over ranks /
// (ranks * makespan), where a rank's idle time is makespan minus its forward + backward (B and W)
// time.
#pragma once

#include <algorithm>
#include <vector>

namespace trident::pp {

// backward: the fused backward, or zero-bubble's B (input gradient); weight: zero-bubble's W.
enum class SpanKind { forward, backward, send, recv, idle, weight };

inline const char* to_string(SpanKind kind) {
  switch (kind) {
    case SpanKind::forward:
      return "forward";
    case SpanKind::backward:
      return "backward";
    case SpanKind::send:
      return "send";
    case SpanKind::recv:
      return "recv";
    case SpanKind::idle:
      return "idle";
    case SpanKind::weight:
      return "weight";
  }
  return "?";
}

inline bool is_compute(SpanKind kind) {
  return kind == SpanKind::forward || kind == SpanKind::backward || kind == SpanKind::weight;
}

struct Span {
  int rank;
  SpanKind kind;
  int microbatch;
  int chunk;
  double begin, end;
};

struct Timeline {
  int ranks = 0;
  std::vector<Span> spans;

  double start() const {
    double t = spans.empty() ? 0 : spans.front().begin;
    for (const Span& s : spans) t = std::min(t, s.begin);
    return t;
  }
  // From the earliest begin to the latest end (a simulation starts at 0).
  double makespan() const {
    double end = start();
    for (const Span& s : spans) end = std::max(end, s.end);
    return end - start();
  }
  double bubble_fraction() const {
    const double total = makespan() * ranks;
    if (total <= 0) return 0;
    double compute = 0;
    for (const Span& s : spans)
      if (is_compute(s.kind)) compute += s.end - s.begin;
    return (total - compute) / total;
  }
};

}  // namespace trident::pp
