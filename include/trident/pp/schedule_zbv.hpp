// trident/pp/schedule_zbv.hpp: ZB-V, the V-shaped zero-bubble schedule (Qi et al. 2024,
// "Pipeline Parallelism with Controllable Memory", and the ZB-V schedule of Qi et al.'s Zero
// Bubble repository; PyTorch ships it as ScheduleZBVZeroBubble).
//
// Each of the p ranks holds 2 chunks placed in a V (placement.hpp): chunk 0 is virtual stage s
// (the way down), chunk 1 virtual stage 2p-1-s (the way back up). Each backward is split into B
// (input gradient) and W (weight gradient), as in ZB-H1. Rank s runs, with f0, f1 / b0, b1 / w0,
// w1 the next microbatch of each chunk's F / B / W:
//  1. warm-up: 2 (p - s) - 1 forwards of chunk 0; then s times F(chunk 1), F(chunk 0); then
//     p - s times F, B, W of chunk 1 (the V's bottom turns round on rank p-1 at once);
//  2. steady state, until every forward has run: F(chunk 0) if any is left, B W of chunk 0,
//     F B W of chunk 1;
//  3. cool-down: s times B(chunk 0), B(chunk 1), their W deferred; then p - s times B(chunk 0)
//     and one deferred W of chunk 0; then the deferred W passes, chunk 1's first.
// The rule needs 2p - 1 microbatches to fill rank 0's warm-up; with fewer it is written for
// 2p - 1 and the missing microbatches' actions are dropped (what is left keeps its order, so it
// still runs: every remaining receive still meets its send). trident asks for m >= p, as for
// ZB-H1 (schedule.hpp). Activations: every rank holds at most 2 min(m, p) microbatch-chunks of
// half a stage each, 1F1B's peak of min(m, p) whole-stage microbatches (its stage 0's).
// Bubble: Qi et al. give 0 for equal F, B and W (the table of ZB-V / V-ZB); the simulator
// (simulate.hpp) finds (p-1) F/2 once m >= 2p - 1, the one idle time no schedule can fill: the
// last rank waits for the first microbatch to go down p - 1 chunks of half a stage each (against
// 1F1B's (p-1)(F + B + W) and ZB-H1's (p-1)(F + B - W)).
#pragma once

#include <algorithm>

#include "action.hpp"

namespace trident::pp::detail {

// One rank's ZB-V list for m microbatches, written into w (its map: V-shape, 2 chunks).
inline void write_zbv(StageWriter& w, int m) {
  const int p = w.map.stages, s = w.stage, n = std::max(m, 2 * p - 1);
  int f[2] = {0, 0}, b[2] = {0, 0}, wt[2] = {0, 0};  // next F, B, W of each chunk
  auto F = [&](int c) {
    if (f[c] < m) w.forward(f[c], c);
    ++f[c];
  };
  auto B = [&](int c) {
    if (b[c] < m) w.backward(b[c], c, Op::backward_input);
    ++b[c];
  };
  auto W = [&](int c) {
    if (wt[c] < m) w.weight(wt[c], c);
    ++wt[c];
  };
  for (int k = 0; k < 2 * (p - s) - 1; ++k) F(0);  // 1. warm-up
  for (int k = 0; k < s; ++k) {
    F(1);
    F(0);
  }
  for (int k = 0; k < p - s; ++k) {
    F(1);
    B(1);
    W(1);
  }
  while (f[1] < f[0] || f[0] < n) {  // 2. steady state
    if (f[0] < n) F(0);
    B(0);
    W(0);
    F(1);
    B(1);
    W(1);
  }
  for (int k = 0; k < s; ++k) {
    B(0);
    B(1);
  }  // 3. cool-down
  for (int k = 0; k < p - s; ++k) {
    B(0);
    W(0);
  }
  while (wt[1] < n) W(1);
  while (wt[0] < n) W(0);
}

}  // namespace trident::pp::detail
