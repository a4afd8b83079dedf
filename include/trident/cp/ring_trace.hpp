// trident/cp/ring_trace.hpp: when each step of the ring ran on this rank, for pictures of its
// overlap (examples/long_context.cpp draws them as pipeline_schedule draws a pipeline).
//
// Off by default; while on(), ring_attention_forward and _backward (cp/ring_attention.hpp) add
// one RingStep per block: when its transfers were posted, when the block's computation began and
// ended, and when the next block (and, backward, the travelling dK, dV) had arrived. The time
// between `computed` and `arrived` is what the ring did not hide: the exposed wait.
#pragma once

#include <vector>

#include "../core/flight_recorder.hpp"

namespace trident {

struct RingStep {
  int call = 0;  // the ring call on this rank since the trace was cleared
  bool backward = false;
  int step = 0;                    // 0 .. cp-1: the block of rank (r - step) mod cp
  int source = 0;                  // that rank
  double posted = 0;               // the next block's transfer posted (= begin on the last step)
  double begin = 0, computed = 0;  // the block's computation
  double arrived = 0;              // the waits done: the next block is here
};

class RingTrace {
 public:
  bool on() const { return on_; }
  void start() {
    steps_.clear();
    calls_ = 0;
    on_ = true;
  }
  void stop() { on_ = false; }
  const std::vector<RingStep>& steps() const { return steps_; }
  int begin_call() { return calls_++; }
  void add(const RingStep& s) {
    if (on_) steps_.push_back(s);
  }

 private:
  bool on_ = false;
  int calls_ = 0;
  std::vector<RingStep> steps_;
};

// The process's trace (one per rank).
inline RingTrace& ring_trace() {
  static RingTrace trace;
  return trace;
}

inline double ring_clock() {
  return detail::now_seconds();
}

}  // namespace trident
