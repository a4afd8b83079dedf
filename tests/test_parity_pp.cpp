// Pipeline parallelism against the single-process reference, in double: GPipe, 1F1B and
// interleaved 1F1B at PP = 2 and 4 with m in {1, p, 2p+1} where the schedule allows, with TP,
// with an uneven layer split, and with activation recomputation; ZB-H1 (backward split into B
// and W) and ZB-V (the same in a V of 2 chunks per rank) at PP = 2 and 4 with m in {p, 2p,
// 2p+1}, with TP (and SP) and with DP and ZeRO 1-3; the head alone on the last virtual stage;
// interleaved at PP = 1 with v = 2 (both tied embedding copies on one rank): alone, TP2, DP2
// ZeRO-3. A tie declared between parameters of different shapes is refused.
#include "parity.hpp"

using namespace trident;
using pp::ScheduleKind;

namespace {
void run(int ranks, MeshShape mesh, ScheduleKind kind, int m, int layers = 4, int v = 1,
         Recompute recompute = Recompute::none, std::vector<double> split = {},
         ZeroPolicy zero = {}, bool sp = false) {
  auto comm = test::first_ranks(ranks, test::current_test_name());
  if (!comm) return;
  gpt2::Options o = test::small_options(mesh, layers);
  o.schedule = kind;
  o.microbatches = m;
  o.virtual_stages = v;
  o.batch = 2 * m;
  o.recompute = recompute;
  o.pp_layers = split;
  o.zero = zero;
  o.sequence_parallel = sp;
  INFO(std::string(pp::to_string(kind))
       << " TP=" << mesh.tp << " PP=" << mesh.pp << " DP=" << mesh.dp << " ZeRO-" << zero.stage
       << " m=" << m << " v=" << v << std::string(recompute == Recompute::full ? " recompute" : "")
       << std::string(sp ? " SP" : ""));
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

TEST_CASE(
    "uneven splits (--pp-layers 3,1; auto on 3 layers) and recomputation give the same "
    "numbers") {
  run(2, {1, 2, 1}, ScheduleKind::one_f_one_b, 3, 4, 1, Recompute::none, {3, 1});
  run(2, {1, 2, 1}, ScheduleKind::one_f_one_b, 3, 3);  // auto: 1.5 + 1.5 (see test_plan)
  run(2, {1, 2, 1}, ScheduleKind::one_f_one_b, 3, 4, 1, Recompute::full);
}

TEST_CASE("ZB-H1 (B and W split): PP=2 with m = 2, 4, 5 and PP=4 with m = 4, 8, 9") {
  for (int m : {2, 4, 5}) run(2, {1, 2, 1}, ScheduleKind::zb_h1, m);
  for (int m : {4, 8, 9}) run(4, {1, 4, 1}, ScheduleKind::zb_h1, m);
}

TEST_CASE("ZB-H1 with TP2 (and sequence parallelism) and with DP2 under ZeRO 1, 2 and 3") {
  run(4, {2, 2, 1}, ScheduleKind::zb_h1, 4);
  run(4, {2, 2, 1}, ScheduleKind::zb_h1, 5, 4, 1, Recompute::none, {}, {}, /*sp=*/true);
  for (int stage : {1, 2, 3})
    run(4, {1, 2, 2}, ScheduleKind::zb_h1, 4, 4, 1, Recompute::none, {}, {stage});
}

// ZB-V: 2 chunks per rank in a V (4 layers: 1 per chunk at PP=2; 8 layers at PP=4); the
// embedding and the head both on rank 0, their tied copies summed there.
TEST_CASE("ZB-V (V of 2 chunks, B and W split): PP=2 with m = 2, 4, 5 and PP=4 with m = 4, 8, 9") {
  for (int m : {2, 4, 5}) run(2, {1, 2, 1}, ScheduleKind::zbv, m, 4, 2);
  for (int m : {4, 8, 9}) run(4, {1, 4, 1}, ScheduleKind::zbv, m, 8, 2);
}

TEST_CASE("ZB-V with TP2 (and sequence parallelism) and with DP2 under ZeRO 1, 2 and 3") {
  run(4, {2, 2, 1}, ScheduleKind::zbv, 4, 4, 2);
  run(4, {2, 2, 1}, ScheduleKind::zbv, 5, 4, 2, Recompute::none, {}, {}, /*sp=*/true);
  for (int stage : {1, 2, 3})
    run(4, {1, 2, 2}, ScheduleKind::zbv, 4, 4, 2, Recompute::none, {}, {stage});
}

// The last virtual stage with no layer, the head alone (what --pp-layers auto gives the bench
// model's V): 1F1B and ZB-H1 with 4 + 0, ZB-V with 1, 1, 2, 0 (rank 0: layer 0 and the head)
// and with TP2 (SP), and DP2 ZeRO-1.
TEST_CASE("the head alone on the last virtual stage: 1f1b, zb-h1 (4+0) and zbv (1,1,2,0)") {
  const Recompute none = Recompute::none;
  run(2, {1, 2, 1}, ScheduleKind::one_f_one_b, 3, 4, 1, none, {4, 0});
  run(2, {1, 2, 1}, ScheduleKind::zb_h1, 4, 4, 1, none, {4, 0});
  for (int m : {2, 5}) run(2, {1, 2, 1}, ScheduleKind::zbv, m, 4, 2, none, {1, 1, 2, 0});
  run(4, {2, 2, 1}, ScheduleKind::zbv, 4, 4, 2, none, {1, 1, 2, 0}, {}, /*sp=*/true);
  run(4, {1, 2, 2}, ScheduleKind::zbv, 4, 4, 2, none, {1, 1, 2, 0}, {1});
}

// A stage boundary between a layer's attention and MLP halves (nn/block_halves.hpp): both
// stages hold the layer, each takes its half's gradients, the copies are summed (train/ties.hpp)
// across two pipeline ranks (neighbours at PP=4, not only the first and last) or on one rank
// (ZB-V's 1.5,1,1.5,0 splits layer 1 across ranks 0 and 1, layer 2 inside rank 1).
TEST_CASE("a stage boundary inside a layer (--pp-layers 2.5,1.5 etc.) gives the same numbers") {
  const Recompute none = Recompute::none;
  run(2, {1, 2, 1}, ScheduleKind::one_f_one_b, 3, 4, 1, none, {2.5, 1.5});
  run(2, {1, 2, 1}, ScheduleKind::gpipe, 2, 4, 1, none, {0.5, 3.5});  // attention half alone
  run(2, {1, 2, 1}, ScheduleKind::one_f_one_b, 3, 4, 1, Recompute::full, {1.5, 2.5});
  run(2, {1, 2, 1}, ScheduleKind::zb_h1, 4, 4, 1, none, {2.5, 1.5});
  for (int m : {2, 5}) run(2, {1, 2, 1}, ScheduleKind::zbv, m, 4, 2, none, {1.5, 1, 1.5, 0});
  run(4, {1, 4, 1}, ScheduleKind::one_f_one_b, 4, 4, 1, none, {1.5, 1, 1, 0.5});
  run(2, {1, 2, 1}, ScheduleKind::interleaved, 2, 4, 2, none, {1.5, 0.5, 1, 1});
  run(4, {2, 2, 1}, ScheduleKind::zbv, 4, 4, 2, none, {1.5, 1, 1.5, 0}, {}, /*sp=*/true);
  for (int stage : {1, 3})
    run(4, {1, 2, 2}, ScheduleKind::zbv, 4, 4, 2, none, {1.5, 1, 1.5, 0}, {stage});
  run(4, {1, 2, 2}, ScheduleKind::zb_h1, 4, 4, 1, none, {2.5, 1.5}, {2});
}

TEST_CASE("PP=1 interleaved (v=2): the tied embedding's two copies on one rank are summed") {
  run(1, {1, 1, 1}, ScheduleKind::interleaved, 2, 4, 2);
  run(2, {2, 1, 1}, ScheduleKind::interleaved, 2, 4, 2);
  run(2, {1, 1, 2}, ScheduleKind::interleaved, 2, 4, 2, Recompute::none, {}, {3});
}

namespace {
// GPT-2 with its word embedding declared tied to the final LayerNorm: shapes that differ.
struct MistiedGPT : gpt2::Model {
  using gpt2::Model::Model;
  std::vector<Tie> ties(int stages) const { return {{"wte", 0, "ln_f", stages - 1}}; }
};

void expect_mistied(int ranks, MeshShape mesh) {
  auto comm = test::first_ranks(ranks, test::current_test_name());
  if (!comm) return;
  const gpt2::Options o = test::small_options(mesh, 4);
  std::string what;
  try {
    Trainer<MistiedGPT, double> t(*comm, MistiedGPT(o.model), o,
                                  TokenSource::synthetic(o.model.vocab));
  } catch (const Error& e) {
    what = e.what();
  }
  INFO(what);
  CHECK(what.find("cannot tie 'wte' of virtual stage 0 (wte.weight [67, 32]") == 0);
  CHECK(what.find("and 'ln_f' of virtual stage " + std::to_string(mesh.pp - 1) +
                  " (ln_f.weight [32]") != std::string::npos);
  CHECK(what.find("their shapes or placements differ") != std::string::npos);
}
}  // namespace

TEST_CASE("a tie of parameters of different shapes is one Error naming both, on every rank") {
  expect_mistied(1, {1, 1, 1});
  expect_mistied(2, {1, 2, 1});
}
