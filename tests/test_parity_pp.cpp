// Pipeline parallelism against the single-process reference, in double: GPipe, 1F1B and
// interleaved 1F1B at PP = 2 and 4 with m in {1, p, 2p+1} where the schedule allows, with TP,
// with an uneven layer split, and with activation recomputation.
#include "parity.hpp"

using namespace trident;
using pp::ScheduleKind;

namespace {
void run(int ranks, MeshShape mesh, ScheduleKind kind, int m, int layers = 4, int v = 1,
         bool recompute = false, std::vector<int> split = {}) {
  auto comm = test::first_ranks(ranks, test::current_test_name());
  if (!comm) return;
  TrainOptions o = test::small_options(mesh, layers);
  o.schedule = kind;
  o.microbatches = m;
  o.virtual_stages = v;
  o.batch = 2 * m;
  o.recompute = recompute;
  o.pp_layers = split;
  INFO(std::string(pp::to_string(kind))
       << " TP=" << mesh.tp << " PP=" << mesh.pp << " m=" << m << " v=" << v
       << std::string(recompute ? " recompute" : ""));
  test::check_parity<double>(*comm, o, 3, 1e-10);
}
}  // namespace

TEST_CASE("PP=2: gpipe and 1f1b with m = 1, 2, 5; interleaved with m = 2") {
  for (ScheduleKind k : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b})
    for (int m : {1, 2, 5}) run(2, {1, 2, 1}, k, m);
  run(2, {1, 2, 1}, ScheduleKind::interleaved, 2, 4, 2);
}

TEST_CASE("PP=4: gpipe and 1f1b with m = 1, 4, 9; interleaved (v=2, 8 layers) with m = 4") {
  for (ScheduleKind k : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b})
    for (int m : {1, 4, 9}) run(4, {1, 4, 1}, k, m);
  run(4, {1, 4, 1}, ScheduleKind::interleaved, 4, 8, 2);
}

TEST_CASE("PP with TP: TP2-PP2 with m=5 and TP2-PP4 with m=4") {
  run(4, {2, 2, 1}, ScheduleKind::one_f_one_b, 5);
  run(8, {2, 4, 1}, ScheduleKind::one_f_one_b, 4);
  run(8, {2, 4, 1}, ScheduleKind::interleaved, 4, 8, 2);
}

TEST_CASE("an uneven split --pp-layers 3,1 and full recomputation give the same numbers") {
  run(2, {1, 2, 1}, ScheduleKind::one_f_one_b, 3, 4, 1, false, {3, 1});
  run(2, {1, 2, 1}, ScheduleKind::one_f_one_b, 3, 4, 1, /*recompute=*/true);
}
