// The Llama-style decoder (models/llama/): every parallel configuration against its own
// single-process run in double (every step's loss and gradient norm, every parameter after 3
// AdamW steps) through the parity kit (testing/), the whole model's and each part's gradients
// against central finite differences, and the model's bad input; selective recomputation
// (--recompute selective) against none, bit for bit, and the activations it keeps.
#include <trident/models/llama/llama.hpp>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include <trident/backend/emulated/emulated.hpp>
#include <trident/testing/doctest.hpp>
#include <trident/train/formulas.hpp>

#include "model_parity.hpp"
#include "mpi_test.hpp"
#include "small_model.hpp"

using namespace trident;

namespace {

// A small model with grouped-query attention (4 query heads share 2 KV heads); a vocab of 67
// is divisible by no TP size, so the vocab-parallel padding is always exercised.
TrainOptions small_run(MeshShape mesh) {
  TrainOptions o;
  o.mesh = mesh;
  o.batch = 8;
  o.optimizer.lr = 1e-2;
  o.optimizer.warmup = 1;
  o.optimizer.steps = 3;
  o.optimizer.clip = 1.0;
  return o;
}

// Runs 3 steps of `o` on comm and of the same run on one process (each rank runs it on its own),
// and checks every step's loss and gradient norm and every parameter element this rank holds
// (model_parity.hpp). B: the backend of the parallel run (its reference runs on the CPU).
template <class B = backend::Cpu>
void check_against_single_process(const Comm& comm, const llama::Config& c, const TrainOptions& o,
                                  double tol = 1e-10) {
  const TokenSource data = TokenSource::synthetic(c.vocab);
  const Comm self = comm.split(comm.rank(), 0, "self");
  llama::Trainer<double, double, B> run(comm, llama::Model(c), o, data);
  llama::Trainer<double> ref(self, llama::Model(c), testing::single_process(o), data);
  test::check_against_single_process(run, ref, 3, tol);
}

}  // namespace

// A stage boundary between a block's attention and MLP halves (nn/block_halves.hpp): 1F1B 1.5 +
// 2.5 (with full recomputation), ZB-H1 2.5 + 1.5, ZB-V 1.5, 1, 1.5, 0; and TP2 (SP) x PP2 2.5 +
// 1.5. Every parameter compared on every rank: both copies of a split block.
TEST_CASE("llama: PP=2 with a stage boundary inside a block matches one process in double") {
  struct Case {
    pp::ScheduleKind schedule;
    std::vector<double> split;
    Recompute recompute;
  };
  for (const Case& k : {Case{pp::ScheduleKind::one_f_one_b, {1.5, 2.5}, Recompute::full},
                        Case{pp::ScheduleKind::zb_h1, {2.5, 1.5}, Recompute::none},
                        Case{pp::ScheduleKind::zbv, {1.5, 1, 1.5, 0}, Recompute::none}}) {
    auto comm = test::first_ranks(2, test::current_test_name());
    if (!comm) continue;
    INFO("schedule " << pp::to_string(k.schedule));
    TrainOptions o = small_run({1, 2, 1});
    o.schedule = k.schedule;
    o.virtual_stages = k.split.size() / 2;
    o.pp_layers = k.split;
    o.recompute = k.recompute;
    o.microbatches = 4;
    check_against_single_process(*comm, test::small_llama(), o);
  }
  auto comm = test::first_ranks(4, test::current_test_name());
  if (!comm) return;
  TrainOptions o = small_run({2, 2, 1});
  o.sequence_parallel = true;
  o.microbatches = 2;
  o.pp_layers = {2.5, 1.5};
  check_against_single_process(*comm, test::small_llama(), o);
}

TEST_CASE(
    "llama: PP=2 interleaved (2 virtual stages) with full recomputation matches one process") {
  TRIDENT_RANKS(2, comm);
  TrainOptions o = small_run({1, 2, 1});
  o.schedule = pp::ScheduleKind::interleaved;
  o.virtual_stages = 2;
  o.microbatches = 4;
  o.recompute = Recompute::full;
  check_against_single_process(comm, test::small_llama(), o);
}

// The parity kit (testing/parity.hpp) on the cases 2 ranks allow: TP2 with and without SP, PP2
// under GPipe, 1F1B (with full recomputation too), interleaved, ZB-H1 and ZB-V, DP2 with ZeRO 0-3,
// CP2 — each against one process in double, within 1e-10.
TEST_CASE("llama: the parity kit's 2-rank cases match one process in double") {
  TRIDENT_RANKS(2, comm);
  const testing::ParityReport r = testing::check_parity(
      comm, llama::Model(test::small_llama()), TokenSource::synthetic(67), small_run({1, 1, 1}));
  testing::check(r);
  CHECK(r.count(testing::ParityOutcome::Status::passed) == 13);
}

// Its 4- and 8-rank cases: TP2 x PP2, TP2 x DP2 with ZeRO-3, PP2 x DP2 with ZB-H1 and ZeRO-1,
// PP4, TP2 x PP2 x DP2 with ZeRO-1, without and with SP; TP4 refused (2 KV heads).
TEST_CASE("llama: the parity kit's 4- and 8-rank cases match one process in double") {
  TRIDENT_RANKS(8, comm);
  const llama::Model model(test::small_llama());
  const TrainOptions base = small_run({1, 1, 1});
  std::vector<testing::ParityCase> cases;
  for (const testing::ParityCase& c : testing::default_cases(model, base, comm.size()))
    if (c.run.mesh.product() > 2) cases.push_back(c);
  const testing::ParityReport r =
      testing::check_parity(comm, model, TokenSource::synthetic(67), base, cases);
  testing::check(r);
  CHECK(r.count(testing::ParityOutcome::Status::passed) == 6);
  // TP4 is refused by the model, with its reason: 2 KV heads cannot be split over 4 ranks
  REQUIRE(r.count(testing::ParityOutcome::Status::refused) == 1);
  for (const testing::ParityOutcome& o : r.cases)
    if (o.status == testing::ParityOutcome::Status::refused) {
      CHECK(o.name == "TP4");
      CHECK(o.reason.find("the 2 KV heads are not divisible by TP=4") != std::string::npos);
    }
}

// The kit's gradient check (testing/gradcheck_parts.hpp): the whole model's gradients against
// central differences of the loss, and each part's (embedding, every block, head) alone.
TEST_CASE("llama: the whole model's and each part's gradients match central differences") {
  TRIDENT_RANKS(1, comm);
  llama::Config c = test::small_llama();
  c.layers = 2;
  c.seq = 8;
  TrainOptions o = small_run({1, 1, 1});
  o.batch = 2;
  const testing::GradientReport r =
      testing::check_gradients(comm, llama::Model(c), TokenSource::synthetic(c.vocab), o);
  testing::check(r);
  std::set<std::string> tensors, parts;  // every parameter and every part checked
  for (const testing::GradientCheck& g : r.checks)
    (g.part == "model" ? tensors : parts).insert(g.part == "model" ? g.tensor : g.part);
  CHECK(tensors.size() == 1 + 8 * std::size_t(c.layers) + 2);
  CHECK(parts == std::set<std::string>{"Embedding", "Block 0", "Block 1", "Head"});
}

TEST_CASE("llama: KV heads that do not divide the heads or TP are one Error naming them") {
  TRIDENT_RANKS(2, comm);
  auto message = [&](llama::Config c, MeshShape mesh) {
    try {
      llama::Trainer<double> t(comm, llama::Model(c), small_run(mesh),
                               TokenSource::synthetic(c.vocab));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  llama::Config c = test::small_llama();
  c.kv_heads = 3;
  CHECK(message(c, {1, 1, 2}).find("the 3 KV heads do not divide the 4 attention heads") !=
        std::string::npos);
  c.kv_heads = 1;
  CHECK(message(c, {2, 1, 1}).find("the 1 KV heads are not divisible by TP=2") !=
        std::string::npos);
  c.kv_heads = 2;
  c.heads = 2;
  c.hidden = 36;
  CHECK(message(c, {2, 1, 1}).find("no error") != std::string::npos);  // D = 18: even, fine
}

TEST_CASE("llama: one layer's activations per microbatch, measured, equal the model's formula") {
  TRIDENT_RANKS(2, comm);
  for (const bool sp : {false, true}) {
    TrainOptions o = small_run({2, 1, 1});
    o.sequence_parallel = sp;
    llama::Trainer<double> t(comm, llama::Model(test::small_llama()), o,
                             TokenSource::synthetic(test::small_llama().vocab));
    (void)t.step();
    INFO("TP2" << (sp ? " SP" : ""));
    CHECK(t.chunk(0).layer_activation_bytes() > 0);
    CHECK(t.chunk(0).layer_activation_bytes() == layer_activation_formula(t));
  }
}

namespace llama_recompute {

// The small model, dense or with experts in layers 0 and 2 (top-2 of 4; moe_mlp.hpp).
llama::Config model(bool moe) {
  return moe ? test::small_llama_moe() : test::small_llama();
}

// o under --recompute selective against o under none on backend B, in float, bit for bit:
// every step's loss and gradient norm, every parameter (model_parity.hpp's check_same_bits).
template <class B = backend::Cpu>
void same_bits_as_none(const Comm& comm, const llama::Config& c, TrainOptions o) {
  const TokenSource data = TokenSource::synthetic(c.vocab);
  o.recompute = Recompute::none;
  llama::Trainer<float, float, B> none(comm, llama::Model(c), o, data);
  o.recompute = Recompute::selective;
  llama::Trainer<float, float, B> selective(comm, llama::Model(c), o, data);
  test::check_same_bits(selective, none);
}

TrainOptions on(MeshShape mesh, pp::ScheduleKind kind, int m, int v = 1, ZeroPolicy zero = {},
                bool sp = false, std::vector<double> split = {}) {
  TrainOptions o = small_run(mesh);
  o.schedule = kind;
  o.microbatches = m;
  o.virtual_stages = v;
  o.zero = zero;
  o.sequence_parallel = sp;
  o.pp_layers = std::move(split);
  return o;
}

}  // namespace llama_recompute

TEST_CASE("llama: selective recomputation is bit for bit none (TP2 SP, PP2, DP2 ZeRO-3, MoE)") {
  TRIDENT_RANKS(2, comm);
  using llama_recompute::on;
  using pp::ScheduleKind;
  const struct {
    const char* name;
    TrainOptions o;
  } cases[] = {
      {"TP2 SP", on({2, 1, 1}, ScheduleKind::one_f_one_b, 1, 1, {}, true)},
      {"PP2 1F1B m=4", on({1, 2, 1}, ScheduleKind::one_f_one_b, 4)},
      {"PP2 ZB-H1 2.5 + 1.5", on({1, 2, 1}, ScheduleKind::zb_h1, 4, 1, {}, false, {2.5, 1.5})},
      {"PP2 ZB-V m=4", on({1, 2, 1}, ScheduleKind::zbv, 4, 2)},
      {"DP2 ZeRO-3 m=2", on({1, 1, 2}, ScheduleKind::one_f_one_b, 2, 1, {3})}};
  for (const bool moe : {false, true})
    for (const auto& c : cases) {
      INFO(std::string(c.name) << (moe ? " MoE" : ""));
      llama_recompute::same_bits_as_none(comm, llama_recompute::model(moe), c.o);
    }
  INFO("emulated device, TP2 SP and PP2 ZB-H1");
  llama_recompute::same_bits_as_none<backend::Emulated>(comm, llama_recompute::model(false),
                                                        cases[0].o);
  llama_recompute::same_bits_as_none<backend::Emulated>(comm, llama_recompute::model(true),
                                                        cases[2].o);
}

TEST_CASE("llama: selective recomputation keeps the formula, none's minus the probabilities") {
  TRIDENT_RANKS(2, comm);
  for (const bool moe : {false, true})
    for (const bool sp : {false, true}) {
      const llama::Config c = llama_recompute::model(moe);
      TrainOptions o = small_run({2, 1, 1});
      o.sequence_parallel = sp;
      const TokenSource data = TokenSource::synthetic(c.vocab);
      llama::Trainer<float> none(comm, llama::Model(c), o, data);
      o.recompute = Recompute::selective;
      llama::Trainer<float> selective(comm, llama::Model(c), o, data);
      (void)none.step();
      (void)selective.step();
      // B H/t seq seq floats: one microbatch's attention probabilities on this TP rank
      const double probs =
          double(o.rows_per_microbatch()) * (c.heads / o.mesh.tp) * c.seq * c.seq * sizeof(float);
      const double kept = selective.chunk(0).layer_activation_bytes();
      INFO("TP2" << (sp ? " SP" : "") << (moe ? " MoE" : "") << ": none "
                 << none.chunk(0).layer_activation_bytes() << ", selective " << kept);
      CHECK(kept == layer_activation_formula(selective));
      CHECK(none.chunk(0).layer_activation_bytes() == layer_activation_formula(none));
      CHECK(kept == none.chunk(0).layer_activation_bytes() - probs);
    }
}
