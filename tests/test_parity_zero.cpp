// Data parallelism and ZeRO stages 0-3 against the single-process reference, in double:
// DP = 2, 4, 8 x stages 0-3; TP2-DP2, PP2-DP2 and TP2-PP2-DP2 x stages 0-3 with 1F1B and
// m = 2; the per-step gradient reduction and ZeRO-3's kept parameters; the full-gradient
// reductions overlapped with the backward and after it; mixed precision.
#include "parity.hpp"

using namespace trident;

namespace {
void run(int ranks, MeshShape mesh, ZeroPolicy zero, int m = 1, bool sp = false) {
  auto comm = test::first_ranks(ranks, test::current_test_name());
  if (!comm) return;
  gpt2::Options o = test::small_options(mesh);
  o.zero = zero;
  o.microbatches = m;
  o.sequence_parallel = sp;
  o.batch = 2 * mesh.dp * m;
  INFO("TP=" << mesh.tp << " PP=" << mesh.pp << " DP=" << mesh.dp << " ZeRO-" << zero.stage
             << " m=" << m << std::string(zero.reduce == GradReduce::per_step ? " per step" : "")
             << std::string(zero.keep_gathered ? " keep gathered" : "")
             << std::string(sp ? " SP" : "")
             << std::string(zero.overlap == GradOverlap::overlapped ? " overlapped"
                            : zero.overlap == GradOverlap::at_end   ? " at end"
                                                                    : ""));
  test::check_parity<double>(*comm, o, 3, 1e-10);
}
}  // namespace

TEST_CASE("DP = 2, 4, 8 x ZeRO stages 0-3") {
  for (int dp : {2, 4, 8})
    for (int stage = 0; stage <= 3; ++stage) run(dp, {1, 1, dp}, ZeroPolicy{stage});
}

TEST_CASE("TP2-DP2, PP2-DP2 and TP2-PP2-DP2 x ZeRO stages 0-3, 1F1B with m = 2") {
  for (int stage = 0; stage <= 3; ++stage) {
    run(4, {2, 1, 2}, ZeroPolicy{stage}, 2);
    run(4, {1, 2, 2}, ZeroPolicy{stage}, 2);
    run(8, {2, 2, 2}, ZeroPolicy{stage}, 2);
  }
}

TEST_CASE("ZeRO-2/3 reducing once per step, ZeRO-3 keeping parameters gathered, with SP") {
  run(4, {1, 2, 2}, ZeroPolicy{2, GradReduce::per_step}, 3);
  run(4, {1, 2, 2}, ZeroPolicy{3, GradReduce::per_step}, 3);
  run(4, {1, 2, 2}, ZeroPolicy{3, GradReduce::per_microbatch, true}, 3);
  run(8, {2, 2, 2}, ZeroPolicy{3}, 2, /*sp=*/true);
}

// Stages 0 and 1, and 2-3 reducing per step, with each unit's reduction launched during the
// backward (MPI's nonblocking collectives) and with all of them after it (blocking: the shared-
// memory path). The other cases run with GradOverlap::automatic, which on one node is at_end.
TEST_CASE("gradient reductions overlapped with the backward and after it, ZeRO stages 0-3") {
  for (GradOverlap when : {GradOverlap::overlapped, GradOverlap::at_end})
    for (int stage = 0; stage <= 3; ++stage) {
      ZeroPolicy zero{stage, GradReduce::per_step};
      zero.overlap = when;
      run(4, {1, 1, 4}, zero);
      run(4, {1, 2, 2}, zero, 2);
    }
}

TEST_CASE("GradOverlap::automatic: after the backward when the DP group is on one node") {
  TRIDENT_RANKS(2, comm);
  const std::vector<UnitLayout> layouts = {layout_unit(gpt2::wpe_unit(test::small_model()), 1, 0)};
  const UnitStore<double> both(layouts, ZeroPolicy{0}, comm);
  CHECK(both.policy().overlap ==
        (shm_tuning().enabled ? GradOverlap::at_end : GradOverlap::overlapped));
  const Comm self = comm.split(comm.rank(), 0, "self");
  const UnitStore<double> alone(layouts, ZeroPolicy{0}, self);  // a group of 1
  CHECK(alone.policy().overlap == GradOverlap::overlapped);
}
