// trident/pp/schedule_traits.hpp: what each pipeline schedule is, in one record every reader
// asks: the option parser and the trainer's validation, the executor's placement, the run
// report, the planner (plan/) and the cost model (costmodel/). How a schedule orders its passes
// is schedule.hpp's; everything said about it elsewhere comes from here, so that a new schedule
// is a row of this table and its writer in schedule.hpp.
//   name            as --schedule spells it
//   placement       where its chunks sit (placement.hpp): looped, or ZB-V's V
//   chunks          model chunks per rank (virtual stages) it takes: [min, max], max 0 = any
//   microbatches    what m must be: at least p (zero-bubble), a multiple of p (interleaved)
//   peak in flight  the most activations a stage holds, in microbatches of a whole stage's
//                   layers (Korthikanti et al. 2022 §4.2.3; the simulator's peak_in_flight
//                   over v, simulate.hpp): the first stage's, ZB-V's last (Qi et al. 2024: at
//                   most 1F1B's)
//   bubble          idle over work with equal F, B and W (bubble.hpp), its form and source
#pragma once

#include <algorithm>

#include "bubble.hpp"
#include "placement.hpp"

namespace trident::pp {

enum class ScheduleKind { gpipe, one_f_one_b, interleaved, zb_h1, zbv, forward_only };

struct ScheduleTraits {
  ScheduleKind kind;
  const char* name;
  const char* source;
  bool trains;           // has a backward (all but forward-only)
  bool splits_backward;  // B (input gradients) and W (weight gradients): zero-bubble
  ChunkPlacement placement;
  int min_chunks, max_chunks;
  bool microbatches_at_least_stages, microbatches_multiple_of_stages;
  double (*peak_in_flight)(int p, int m, int v);
  double (*bubble_over_ideal)(int p, int m, int v);
  const char* bubble_form;
  const char* bubble_source;

  bool takes_chunks(int v) const { return v >= min_chunks && (max_chunks == 0 || v <= max_chunks); }
  double bubble_share(int p, int m, int v) const {
    return share_of_step(bubble_over_ideal(p, m, v));
  }
};

namespace detail {
inline double all_microbatches(int, int m, int) {
  return m;
}
inline double one_per_stage(int p, int m, int) {
  return std::min(p, m);
}
// Korthikanti et al. 2022 §4.2.3: L (1 + (p-1)/(p v)) layers, p + (p-1)/v stages' worth, or all
// m microbatches when m is that small.
inline double interleaved_warmup(int p, int m, int v) {
  return std::min(p + (p - 1.0) / v, static_cast<double>(m));
}
inline double flush_bubble(int p, int m, int v) {
  return bubble_over_ideal(p, m, v);
}
inline double zb_h1_bubble(int p, int m, int) {
  return zb_h1_bubble_over_ideal(p, m);
}
inline double zbv_bubble(int p, int m, int) {
  return zbv_bubble_over_ideal(p, m);
}

// In ScheduleKind's order.
inline constexpr ScheduleTraits kScheduleTraits[] = {
    {ScheduleKind::gpipe, "gpipe", "Huang et al. 2019", true, false, ChunkPlacement::looped, 1, 1,
     false, false, all_microbatches, flush_bubble, "(p-1)/(m+p-1)", "Huang et al. 2019 (GPipe)"},
    {ScheduleKind::one_f_one_b, "1f1b", "Narayanan et al. 2021 §2.2 (PipeDream-Flush)", true, false,
     ChunkPlacement::looped, 1, 1, false, false, one_per_stage, flush_bubble, "(p-1)/(m+p-1)",
     "Huang et al. 2019 (GPipe)"},
    {ScheduleKind::interleaved, "interleaved", "Narayanan et al. 2021 §2.2", true, false,
     ChunkPlacement::looped, 2, 0, false, true, interleaved_warmup, flush_bubble, "(p-1)/(v m+p-1)",
     "Narayanan et al. 2021 §2.2"},
    {ScheduleKind::zb_h1, "zb-h1", "Qi et al. 2023 §3.1", true, true, ChunkPlacement::looped, 1, 1,
     true, false, one_per_stage, zb_h1_bubble, "(p-1)/(3m+p-1)", "Qi et al. 2023, F = B = W"},
    {ScheduleKind::zbv, "zbv", "Qi et al. 2024", true, true, ChunkPlacement::v_shape, 2, 2, true,
     false, one_per_stage, zbv_bubble, "idle/(3m+idle), idle = max((p-1)/2, 2p-1-m)",
     "the simulated ZB-V, F = B = W (Qi et al. 2024: 0)"},
    {ScheduleKind::forward_only, "forward-only", "evaluation and sampling", false, false,
     ChunkPlacement::looped, 1, 0, false, false, all_microbatches, flush_bubble, "(p-1)/(v m+p-1)",
     "a pipeline filled once per chunk"},
};
}  // namespace detail

inline const ScheduleTraits& traits(ScheduleKind kind) {
  return detail::kScheduleTraits[static_cast<int>(kind)];
}
inline const char* to_string(ScheduleKind kind) {
  return traits(kind).name;
}

// The training schedules, in the order --schedule lists them.
inline constexpr ScheduleKind kTrainingSchedules[] = {
    ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::interleaved, ScheduleKind::zb_h1,
    ScheduleKind::zbv};

}  // namespace trident::pp
