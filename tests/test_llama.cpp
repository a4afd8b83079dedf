// The Llama-style decoder (models/llama/): every parallel configuration against its own
// single-process run in double (every step's loss and gradient norm, every parameter after 3
// AdamW steps), the whole model's gradients against central finite differences of the loss,
// and the model's bad input.
#include <trident/models/llama/llama.hpp>

#include <cmath>
#include <map>
#include <string>

#include "model_parity.hpp"
#include "mpi_test.hpp"

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
llama::Config small_model() {
  llama::Config c;
  c.vocab = 67, c.seq = 16, c.layers = 4, c.hidden = 32, c.heads = 4, c.kv_heads = 2, c.seed = 7;
  return c;
}

// Runs 3 steps of `o` on comm and of the same run on one process (each rank runs it on its own),
// and checks every step's loss and gradient norm and every parameter element this rank holds
// (model_parity.hpp). B: the backend of the parallel run (its reference runs on the CPU).
template <class B = backend::Cpu>
void check_against_single_process(const Comm& comm, const llama::Config& c, const TrainOptions& o,
                                  double tol = 1e-10) {
  const TokenSource data = TokenSource::synthetic(c.vocab);
  const Comm self = comm.split(comm.rank(), 0, "self");
  TrainOptions one = o;
  one.mesh = {1, 1, 1};
  one.sequence_parallel = false;
  one.schedule = pp::ScheduleKind::one_f_one_b;
  one.microbatches = 1;
  one.virtual_stages = 1;
  one.pp_layers.clear();
  one.zero = ZeroPolicy{};
  llama::Trainer<double, double, B> run(comm, llama::Model(c), o, data);
  llama::Trainer<double> ref(self, llama::Model(c), one, data);
  test::check_against_single_process(run, ref, 3, tol);
}

}  // namespace

TEST_CASE("llama: TP=2, without and with sequence parallelism, matches one process in double") {
  for (bool sp : {false, true}) {
    auto comm = test::first_ranks(2, test::current_test_name());
    if (!comm) continue;
    const std::string name = sp ? "TP=2 with SP" : "TP=2";
    INFO(name);
    TrainOptions o = small_run({2, 1, 1});
    o.sequence_parallel = sp;
    check_against_single_process(*comm, small_model(), o);
  }
}

TEST_CASE("llama: PP=2 with 1F1B and with ZB-H1 matches one process in double") {
  for (auto schedule : {pp::ScheduleKind::one_f_one_b, pp::ScheduleKind::zb_h1}) {
    auto comm = test::first_ranks(2, test::current_test_name());
    if (!comm) continue;
    const std::string name = pp::to_string(schedule);
    INFO("schedule " << name);
    TrainOptions o = small_run({1, 2, 1});
    o.schedule = schedule;
    o.microbatches = 4;
    check_against_single_process(*comm, small_model(), o);
  }
}

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
    check_against_single_process(*comm, small_model(), o);
  }
  auto comm = test::first_ranks(4, test::current_test_name());
  if (!comm) return;
  TrainOptions o = small_run({2, 2, 1});
  o.sequence_parallel = true;
  o.microbatches = 2;
  o.pp_layers = {2.5, 1.5};
  check_against_single_process(*comm, small_model(), o);
}

TEST_CASE(
    "llama: PP=2 interleaved (2 virtual stages) with full recomputation matches one process") {
  TRIDENT_RANKS(2, comm);
  TrainOptions o = small_run({1, 2, 1});
  o.schedule = pp::ScheduleKind::interleaved;
  o.virtual_stages = 2;
  o.microbatches = 4;
  o.recompute = Recompute::full;
  check_against_single_process(comm, small_model(), o);
}

TEST_CASE("llama: DP=2 with ZeRO-3 matches one process in double") {
  TRIDENT_RANKS(2, comm);
  TrainOptions o = small_run({1, 1, 2});
  o.zero.stage = 3;
  o.microbatches = 2;
  check_against_single_process(comm, small_model(), o);
}

TEST_CASE("llama: TP=2 x PP=2 x DP=2 with ZeRO-1 and SP matches one process in double") {
  TRIDENT_RANKS(8, comm);
  TrainOptions o = small_run({2, 2, 2});
  o.zero.stage = 1;
  o.microbatches = 2;
  check_against_single_process(comm, small_model(), o);
  o.sequence_parallel = true;
  check_against_single_process(comm, small_model(), o);
}

TEST_CASE("llama: the whole model's gradients match central differences of the loss") {
  TRIDENT_RANKS(1, comm);
  llama::Config c = small_model();
  c.layers = 2, c.seq = 8;
  TrainOptions o = small_run({1, 1, 1});
  o.batch = 2;
  llama::Trainer<double> t(comm, llama::Model(c), o, TokenSource::synthetic(c.vocab));
  (void)t.gradients_only();
  UnitStore<double>& st = t.chunk(0).store();
  std::map<std::string, std::vector<double>> grads;
  for (int u = 0; u < st.size(); ++u) {
    const Span<double> g = st.reduced_grads(u);
    for (const LocalParam& lp : st.layout(u).params)
      grads[lp.spec.name].assign(g.data() + lp.offset, g.data() + lp.offset + lp.numel);
  }
  // a few elements of every parameter: the loss at w +- h, one process, ZeRO-0 (the stored
  // parameters are the ones the forward reads)
  const double h = 1e-5;
  int checked = 0;
  for (int u = 0; u < st.size(); ++u)
    for (const LocalParam& lp : st.layout(u).params) {
      const std::size_t n = lp.numel;
      for (std::size_t k : {std::size_t(0), n / 3, n - 1}) {
        double* w = st.owned_params(u) + lp.offset + k;
        const double saved = *w;
        *w = saved + h;
        const double up = t.gradients_only().loss;
        *w = saved - h;
        const double down = t.gradients_only().loss;
        *w = saved;
        const double numeric = (up - down) / (2 * h), analytic = grads.at(lp.spec.name)[k];
        INFO(lp.spec.name << "[" << k << "]: numeric " << numeric << ", analytic " << analytic);
        // central differences err by ~1e-10 here; gradients are 1e-6 .. 1e-1
        CHECK(std::abs(numeric - analytic) <= 1e-9 + 1e-6 * std::abs(analytic));
        ++checked;
      }
    }
  CHECK(checked == 3 * (1 + 8 * c.layers + 2));
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
  llama::Config c = small_model();
  c.kv_heads = 3;
  CHECK(message(c, {1, 1, 2}).find("the 3 KV heads do not divide the 4 attention heads") !=
        std::string::npos);
  c.kv_heads = 1;
  CHECK(message(c, {2, 1, 1}).find("the 1 KV heads are not divisible by TP=2") !=
        std::string::npos);
  c.kv_heads = 2, c.heads = 2, c.hidden = 36;
  CHECK(message(c, {2, 1, 1}).find("no error") != std::string::npos);  // D = 18: even, fine
}
