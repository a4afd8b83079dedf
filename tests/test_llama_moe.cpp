// A Llama-style mixture of experts (models/llama/moe_mlp.hpp: a router, top-k of E SwiGLU
// experts, the load-balancing loss per sequence) on every mesh of the parity kit against its own
// single-process run in double (every step's loss and gradient norm, every parameter after 3
// AdamW steps, within 1e-10), its gradients against central finite differences, its activations
// against the model's formula, and its bad input.
#include <trident/models/llama/llama.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include <trident/testing/doctest.hpp>
#include <trident/train/collect.hpp>
#include <trident/train/formulas.hpp>

#include "model_parity.hpp"
#include "mpi_test.hpp"
#include "small_model.hpp"

using namespace trident;

namespace {

// Four experts of width 48 in layers 0 and 2 of 4 (layers 1 and 3 dense), top-2, by default.
llama::Config small_moe(int top_k = 2, int every = 2) {
  return test::small_llama_moe(top_k, every);
}

TrainOptions moe_run(MeshShape mesh) {
  TrainOptions o;
  o.mesh = mesh;
  o.batch = 8;
  o.optimizer = test::small_optimizer();
  return o;
}

}  // namespace

// The kit's 2-rank cases: TP2 with and without SP, PP2 under GPipe, 1F1B (with full
// recomputation too), interleaved, ZB-H1 and ZB-V (the experts' backward split into B and W),
// DP2 with ZeRO 0-3; CP2 refused (the loss is per sequence).
TEST_CASE("llama moe: the parity kit's 2-rank cases match one process in double") {
  TRIDENT_RANKS(2, comm);
  for (const int top_k : {1, 2}) {
    INFO("top-" << top_k);
    const llama::Config c = small_moe(top_k, top_k == 1 ? 1 : 2);
    const testing::ParityReport r = testing::check_parity(
        comm, llama::Model(c), TokenSource::synthetic(c.vocab), moe_run({1, 1, 1}));
    testing::check(r);
    CHECK(r.count(testing::ParityOutcome::Status::passed) == 12);
    REQUIRE(r.count(testing::ParityOutcome::Status::refused) == 1);
    for (const testing::ParityOutcome& o : r.cases)
      if (o.status == testing::ParityOutcome::Status::refused)
        CHECK(o.reason.find("a mixture of experts needs whole sequences") != std::string::npos);
  }
}

// Its 4- and 8-rank cases: TP2 x PP2, TP2 x DP2 with ZeRO-3, PP2 x DP2 with ZB-H1 and ZeRO-1,
// PP4, TP2 x PP2 x DP2 with ZeRO-1, without and with SP; TP4 refused (2 KV heads).
TEST_CASE("llama moe: the parity kit's 4- and 8-rank cases match one process in double") {
  TRIDENT_RANKS(8, comm);
  const llama::Model model(small_moe());
  const TrainOptions base = moe_run({1, 1, 1});
  std::vector<testing::ParityCase> cases;
  for (const testing::ParityCase& c : testing::default_cases(model, base, comm.size()))
    if (c.run.mesh.product() > 2) cases.push_back(c);
  const testing::ParityReport r =
      testing::check_parity(comm, model, TokenSource::synthetic(67), base, cases);
  testing::check(r);
  CHECK(r.count(testing::ParityOutcome::Status::passed) == 6);
}

// The load-balancing loss is in the gradient: without it the parameters after a step differ
// (the kit above compares runs that both have it), and a rerun repeats bit for bit.
TEST_CASE("llama moe: the load-balancing loss moves the parameters; a rerun repeats exactly") {
  TRIDENT_RANKS(2, comm);
  auto train = [&](double alpha) {
    llama::Config c = small_moe();
    c.aux_loss_coef = alpha;
    llama::Trainer<double> t(comm, llama::Model(c), moe_run({2, 1, 1}),
                             TokenSource::synthetic(c.vocab));
    const double loss = t.step().loss;
    const NamedTensors<double> p = collect_parameters(t);  // on world rank 0
    std::vector<double> router;
    if (comm.rank() == 0) {
      const Matrix<double>& m = p.at("layers.0.mlp.router.weight");
      router.assign(m.data(), m.data() + m.size());
    }
    router.push_back(loss);
    return router;
  };
  const std::vector<double> with = train(0.1), again = train(0.1), without = train(0);
  CHECK(with == again);
  REQUIRE(with.size() == without.size());
  CHECK(with.back() == without.back());  // the same forward: the loss is the LM's
  double most = 0;
  for (std::size_t i = 0; i + 1 < with.size(); ++i)
    most = std::max(most, std::abs(with[i] - without[i]));
  if (comm.rank() == 0) CHECK(most > 1e-6);
}

// The kit's gradient check on a model whose every layer is MoE (top-2) and one of top-1 every
// other layer, without the load-balancing term (the loss the check differentiates is the LM's;
// nn_moe checks that term's gradient against central differences).
TEST_CASE("llama moe: the whole model's and each part's gradients match central differences") {
  TRIDENT_RANKS(1, comm);
  for (const int top_k : {1, 2}) {
    llama::Config c = small_moe(top_k, top_k);
    c.layers = 2;
    c.seq = 8;
    c.aux_loss_coef = 0;
    TrainOptions o = moe_run({1, 1, 1});
    o.batch = 2;
    const testing::GradientReport r =
        testing::check_gradients(comm, llama::Model(c), TokenSource::synthetic(c.vocab), o);
    INFO("top-" << top_k);
    testing::check(r);
    std::set<std::string> tensors;
    for (const testing::GradientCheck& g : r.checks)
      if (g.part == "model") tensors.insert(g.tensor);
    CHECK(tensors.count("layers.0.mlp.router.weight") == 1);
    CHECK(tensors.count("layers.0.mlp.experts.gate_up_proj.weight") == 1);
    CHECK(tensors.count("layers.0.mlp.experts.down_proj.weight") == 1);
  }
}

// In float the routing's int32 arrays are one element each: the formula is exact.
TEST_CASE("llama moe: one MoE layer's activations per microbatch, measured, equal the formula") {
  TRIDENT_RANKS(2, comm);
  for (const bool sp : {false, true}) {
    TrainOptions o = moe_run({2, 1, 1});
    o.sequence_parallel = sp;
    const llama::Config c = small_moe(2, 1);
    llama::Trainer<float> t(comm, llama::Model(c), o, TokenSource::synthetic(c.vocab));
    (void)t.step();
    INFO("TP2" << (sp ? " SP" : ""));
    CHECK(t.chunk(0).layer_activation_bytes() > 0);
    CHECK(t.chunk(0).layer_activation_bytes() == layer_activation_formula(t));
  }
}

TEST_CASE("llama moe: bad expert settings are one Error naming them, on every rank") {
  TRIDENT_RANKS(2, comm);
  auto message = [&](llama::Config c, TrainOptions o) {
    try {
      llama::Trainer<double> t(comm, llama::Model(c), o, TokenSource::synthetic(c.vocab));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  llama::Config c = small_moe();
  c.top_k = 3;
  CHECK(message(c, moe_run({1, 1, 2})).find("top-k is 3") != std::string::npos);
  c = small_moe(2);
  c.experts = 1;
  CHECK(message(c, moe_run({1, 1, 2})).find("top-k 2 is larger than the 1 experts") !=
        std::string::npos);
  c = small_moe();
  c.expert_ffn_size = 45;
  CHECK(message(c, moe_run({2, 1, 1}))
            .find("the experts' MLP width 45 is not divisible by "
                  "TP=2") != std::string::npos);
  c = small_moe();
  c.moe_every = 0;
  CHECK(message(c, moe_run({1, 1, 2})).find("--moe-every is 0") != std::string::npos);
  CHECK(
      message(small_moe(), moe_run({1, 1, 1, 2})).find("--cp 2 with --experts is not supported") !=
      std::string::npos);
}

// The device path (backend::Emulated: memory that host code cannot touch, ARCHITECTURE §4.1):
// TP2 with SP, PP2 under 1F1B and ZB-H1, DP2 with ZeRO-3, each equal to the CPU bit for bit in
// float and with bf16 storage; and what crosses between host and device per step: the dense
// model's (token ids up, losses and the norm's sums down) and, per MoE layer and microbatch, its
// expert counts and its sequences' load-balancing losses down (models/llama/moe_mlp.hpp).
TEST_CASE("llama moe: on the emulated device, bit for bit as the CPU; its crossings counted") {
  TRIDENT_RANKS(2, comm);
  using backend::Emulated;
  const llama::Config c = small_moe();
  const TokenSource data = TokenSource::synthetic(c.vocab);
  for (int k = 0; k < 4; ++k) {
    TrainOptions o = moe_run(k == 0   ? MeshShape{2, 1, 1}
                             : k == 3 ? MeshShape{1, 1, 2}
                                      : MeshShape{1, 2, 1});
    o.sequence_parallel = k == 0;
    o.microbatches = k == 1 || k == 2 ? 4 : 2;
    if (k == 2) o.schedule = pp::ScheduleKind::zb_h1;
    if (k == 3) o.zero = ZeroPolicy{3};
    INFO("case " << k);
    llama::Trainer<float, float, backend::Cpu> cpu(comm, llama::Model(c), o, data);
    llama::Trainer<float, float, Emulated> device(comm, llama::Model(c), o, data);
    test::check_same_bits(device, cpu);
    llama::Trainer<float, bf16, backend::Cpu> cpu16(comm, llama::Model(c), o, data);
    llama::Trainer<float, bf16, Emulated> device16(comm, llama::Model(c), o, data);
    test::check_same_bits(device16, cpu16);
    const backend::Crossings before = backend::crossings();
    (void)device.step();
    const backend::Crossings after = backend::crossings();
    const int stage = device.mesh().stage(), m = o.microbatches;
    const bool first = stage == 0, last = stage == o.mesh.pp - 1;
    const StageSpec& spec = device.chunk(0).spec();
    int moe_layers = 0;  // of layers 0 and 2, those on this stage
    for (int l = spec.first_layer; l < spec.first_layer + spec.layers; ++l)
      moe_layers += c.is_moe(l);
    CHECK(after.uploads - before.uploads == std::uint64_t(m * (first + last)));
    CHECK(after.downloads - before.downloads == std::uint64_t(m * last + 1 + 2 * m * moe_layers));
  }
}

// The step's expert figures (train/expert_figures.hpp) are the global batch's, whatever the mesh:
// the load-balancing loss and the expert load of TP2, PP2 and DP2 equal one process's.
TEST_CASE("llama moe: the load-balancing loss and expert load of a step are the mesh's own") {
  TRIDENT_RANKS(2, comm);
  const llama::Config c = small_moe();
  const TokenSource data = TokenSource::synthetic(c.vocab);
  const Comm self = comm.split(comm.rank(), 0, "self");
  llama::Trainer<double> one(self, llama::Model(c), moe_run({1, 1, 1}), data);
  const StepResult ref = one.step();
  CHECK(ref.aux_loss > 0);
  CHECK(ref.expert_load >= 1);
  CHECK(ref.expert_load <= c.experts);
  for (const MeshShape mesh : {MeshShape{2, 1, 1}, MeshShape{1, 2, 1}, MeshShape{1, 1, 2}}) {
    TrainOptions o = moe_run(mesh);
    o.microbatches = 2;
    llama::Trainer<double> t(comm, llama::Model(c), o, data);
    const StepResult r = t.step();
    INFO("TP" << mesh.tp << " PP" << mesh.pp << " DP" << mesh.dp);
    CHECK(r.aux_loss == doctest::Approx(ref.aux_loss).epsilon(1e-12));
    CHECK(r.expert_load == doctest::Approx(ref.expert_load).epsilon(1e-12));
  }
}
