// trident/testing/parity_cases.hpp: the parallel configurations the parity kit checks
// (testing/parity.hpp) — every axis, schedule and ZeRO stage a world of n ranks allows, and
// their compositions — and the one-process run they are compared with.
#pragma once

#include <string>
#include <vector>

#include "../model/model.hpp"
#include "../train/options.hpp"

namespace trident::testing {

// One parallel configuration: a name and the whole run (the base run's batch, optimizer and
// data seed, with its own mesh, schedule, microbatches, ZeRO, recomputation).
struct ParityCase {
  std::string name;
  TrainOptions run;
};

// The base run on one process: mesh 1 x 1 x 1, one microbatch, no ZeRO, no recomputation.
inline TrainOptions single_process(const TrainOptions& base) {
  TrainOptions one = base;
  one.mesh = {1, 1, 1};
  one.sequence_parallel = false;
  one.schedule = pp::ScheduleKind::one_f_one_b;
  one.microbatches = 1;
  one.virtual_stages = 1;
  one.pp_layers.clear();
  one.recompute = Recompute::none;
  one.zero = ZeroPolicy{};
  return one;
}

// A case on `mesh` from the base run (one process's settings otherwise).
inline ParityCase parity_case(const std::string& name, const TrainOptions& base, MeshShape mesh,
                              int microbatches = 1) {
  ParityCase c{name, single_process(base)};
  c.run.mesh = mesh;
  c.run.microbatches = microbatches;
  return c;
}

// Every case a world of `ranks` allows, smallest first: TP2 (with and without sequence
// parallelism), PP2 under each schedule (GPipe, 1F1B with and without full recomputation,
// interleaved, ZB-H1, ZB-V; 4 microbatches), DP2 with ZeRO 0-3, CP2 when the model declares
// kContextParallel; with 4 ranks TP2 x PP2, TP2 x DP2 (ZeRO-3), PP2 x DP2 (ZB-H1, ZeRO-1), TP4,
// PP4; with 8, TP2 x PP2 x DP2 (ZeRO-1, without and with sequence parallelism). The model refuses
// what its shape cannot run (too few layers, sizes not divisible by TP): those are reported as
// refused.
template <class M>
std::vector<ParityCase> default_cases(const M&, const TrainOptions& base, int ranks) {
  using pp::ScheduleKind;
  std::vector<ParityCase> out;
  auto add = [&](ParityCase c, int needed) {
    if (needed <= ranks) out.push_back(std::move(c));
  };
  add(parity_case("TP2", base, {2, 1, 1}), 2);
  ParityCase sp = parity_case("TP2 sequence parallel", base, {2, 1, 1});
  sp.run.sequence_parallel = true;
  add(sp, 2);
  for (ScheduleKind kind : pp::kTrainingSchedules) {  // every schedule, as its traits run it
    ParityCase c = parity_case(std::string("PP2 ") + pp::to_string(kind), base, {1, 2, 1}, 4);
    c.run.schedule = kind;
    c.run.virtual_stages = pp::traits(kind).min_chunks;
    add(c, 2);
  }
  ParityCase recompute = parity_case("PP2 1f1b recompute", base, {1, 2, 1}, 4);
  recompute.run.recompute = Recompute::full;
  add(recompute, 2);
  for (int stage = 0; stage <= 3; ++stage) {
    ParityCase c = parity_case("DP2 ZeRO-" + std::to_string(stage), base, {1, 1, 2}, 2);
    c.run.zero.stage = stage;
    add(c, 2);
  }
  if (supports_context_parallel<M>::value) add(parity_case("CP2", base, {1, 1, 1, 2}), 2);
  add(parity_case("TP2 x PP2 1f1b", base, {2, 2, 1}, 2), 4);
  ParityCase tp_dp = parity_case("TP2 x DP2 ZeRO-3", base, {2, 1, 2});
  tp_dp.run.zero.stage = 3;
  add(tp_dp, 4);
  ParityCase pp_dp = parity_case("PP2 x DP2 zb-h1 ZeRO-1", base, {1, 2, 2}, 2);
  pp_dp.run.schedule = ScheduleKind::zb_h1;
  pp_dp.run.zero.stage = 1;
  add(pp_dp, 4);
  add(parity_case("TP4", base, {4, 1, 1}), 4);
  add(parity_case("PP4 1f1b", base, {1, 4, 1}, 4), 4);
  for (bool sp : {false, true}) {
    ParityCase all = parity_case(sp ? "TP2 x PP2 x DP2 ZeRO-1 SP" : "TP2 x PP2 x DP2 ZeRO-1", base,
                                 {2, 2, 2}, 2);
    all.run.zero.stage = 1;
    all.run.sequence_parallel = sp;
    add(all, 8);
  }
  return out;
}

}  // namespace trident::testing
