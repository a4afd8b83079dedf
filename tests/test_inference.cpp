// Inference and evaluation: the forward-only pipeline schedule in the simulator; evaluate() on a
// held-out tail against the single-process reference (double, 1e-10) on 1 process, TP2, TP2
// with SP, PP2 1F1B, PP2 interleaved, PP2 ZB-V, DP2 ZeRO-3 and TP2-PP2-DP2 ZeRO-1, and training
// after it unchanged; sample() giving the same tokens on all those meshes for one seed and other
// tokens for another; the token choice (temperature, top-k) and its bad values.
#include <trident/pp/simulate.hpp>
#include <trident/train/sample.hpp>

#include "parity.hpp"

using namespace trident;
using pp::ScheduleKind;

namespace {

// A deterministic corpus of 4000 ids below 67 (the parity model's vocab), with structure to learn.
TokenSource corpus() {
  std::vector<std::int32_t> ids(4000);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = std::int32_t((i * 7 + i / 13) % 67);
  return TokenSource::from_tokens(ids, "corpus");
}

struct MeshCase {
  const char* name;
  int ranks;
  MeshShape mesh;
  ScheduleKind schedule = ScheduleKind::one_f_one_b;
  int microbatches = 1, virtual_stages = 1, zero = 0;
  bool sp = false;
};
const std::vector<MeshCase>& meshes() {
  static const std::vector<MeshCase> cases = {
      {"1 process", 1, {1, 1, 1}},
      {"TP2", 2, {2, 1, 1}},
      {"TP2 SP", 2, {2, 1, 1}, ScheduleKind::one_f_one_b, 1, 1, 0, true},
      {"PP2 1F1B", 2, {1, 2, 1}, ScheduleKind::one_f_one_b, 4},
      {"PP2 interleaved", 2, {1, 2, 1}, ScheduleKind::interleaved, 2, 2},
      {"PP2 ZB-V (the loss on stage 0)", 2, {1, 2, 1}, ScheduleKind::zbv, 2, 2},
      {"DP2 ZeRO-3", 2, {1, 1, 2}, ScheduleKind::one_f_one_b, 2, 1, 3},
      {"TP2-PP2-DP2 ZeRO-1", 8, {2, 2, 2}, ScheduleKind::one_f_one_b, 2, 1, 1},
  };
  return cases;
}
gpt2::Options options(const MeshCase& c) {
  gpt2::Options o = test::small_options(c.mesh);
  o.schedule = c.schedule;
  o.microbatches = c.microbatches;
  o.virtual_stages = c.virtual_stages;
  o.zero.stage = c.zero;
  o.sequence_parallel = c.sp;
  return o;
}

constexpr int kEvalBatches = 2;

// The reference's mean loss over the evaluation batches (train/evaluate.hpp's rows).
double reference_loss(gpt2::ReferenceGPT<double>& ref, const TokenSource& held_out,
                      const gpt2::Options& o) {
  double sum = 0;
  for (int k = 0; k < kEvalBatches; ++k)
    sum += ref.forward_backward(sample_rows(held_out, o.data_seed, k, 0, o.batch, o.model.seq));
  return sum / kEvalBatches;
}

// `tokens` tokens sampled after a 3-token prompt, after 2 training steps.
std::vector<std::int32_t> sample_after_training(const Comm& comm, const gpt2::Options& o,
                                                std::uint64_t seed, int tokens = 24) {
  gpt2::Trainer<double> t(comm, o, corpus());
  (void)t.step(), (void)t.step();
  return sample(t, {5, 12, 19}, SampleOptions{tokens, 0.9, 20, seed});
}

}  // namespace

TEST_CASE("forward-only schedule: all forwards, no backward; the simulator finds no deadlock") {
  for (int p : {1, 2, 4})
    for (int m : {1, 3, 4, 8})
      for (int v : {1, 2}) {
        INFO("p=" << p << " m=" << m << " v=" << v);
        const auto schedule = pp::make_schedule({ScheduleKind::forward_only, p, m, v});
        for (const auto& stage : schedule) {
          int forwards = 0;
          for (const pp::Action& a : stage) {
            CHECK(a.op != pp::Op::backward);
            CHECK(a.op != pp::Op::recv_backward);
            forwards += a.op == pp::Op::forward;
          }
          CHECK(forwards == m * v);
        }
        const pp::Simulation sim = pp::simulate(schedule);
        REQUIRE_FALSE(sim.deadlock);
        // chunk-major with m >= p: the pipeline fills once, (v m + p - 1) chunk-forwards of 1/v
        if (m >= p) CHECK(sim.makespan == doctest::Approx((v * m + p - 1.0) / v));
      }
  // not a training schedule
  CHECK_THROWS_WITH_AS(pp::parse_schedule("forward-only"),
                       doctest::Contains("unknown pipeline schedule 'forward-only'"), Error);
}

TEST_CASE("evaluate: the held-out loss equals the single-process reference's on every mesh") {
  const auto [train, held_out] = corpus().split_tail(0.1, 16);
  for (const MeshCase& c : meshes()) {
    auto comm = test::first_ranks(c.ranks, test::current_test_name());
    if (!comm) continue;
    INFO(c.name);
    const gpt2::Options o = options(c);
    gpt2::Trainer<double> t(*comm, o, train);
    gpt2::ReferenceGPT<double> ref(o.model);
    const double before = evaluate(t, held_out, kEvalBatches);
    CHECK(std::abs(before - reference_loss(ref, held_out, o)) <= 1e-10 * before);
    for (int s = 0; s < 3; ++s) {  // training after an evaluation is unchanged
      const double loss = t.step().loss;
      const double want = ref.forward_backward(sample_rows(train, o.data_seed, s, 0, o.batch, 16));
      ref.step(o.optimizer, s + 1);
      CHECK(std::abs(loss - want) <= 1e-10 * want);
      const double val = evaluate(t, held_out, kEvalBatches);
      CHECK(std::abs(val - reference_loss(ref, held_out, o)) <= 1e-10 * val);
    }
  }
}

TEST_CASE("split_tail: the last 10% of the tokens held out; too little data is refused") {
  const auto [train, held_out] = corpus().split_tail(0.1, 16);
  std::vector<std::int32_t> in(16), tg(16);
  // the held-out part's sequences come from tokens [3600, 4000): token i is (7 i + i / 13) % 67
  for (int row = 0; row < 20; ++row) {
    held_out.sample(1, 0, row, 16, in.data(), tg.data());
    bool found = false;
    for (int i = 3600; i + 16 < 4000 && !found; ++i)
      found = in[0] == (i * 7 + i / 13) % 67 && in[1] == ((i + 1) * 7 + (i + 1) / 13) % 67 &&
              in[15] == ((i + 15) * 7 + (i + 15) / 13) % 67;
    CHECK(found);
  }
  CHECK(train.vocab() == 67);
  CHECK(held_out.vocab() == 67);
  CHECK_THROWS_WITH_AS(
      TokenSource::from_tokens(std::vector<std::int32_t>(100, 1), "tiny").split_tail(0.1, 16),
      "the data 'tiny' has 100 tokens: too few to hold out 10 and still have a "
      "sequence of 16 + 1 in each part",
      Error);
  // synthetic: other tokens for the held-out part
  const auto [s_train, s_held] = TokenSource::synthetic(67).split_tail(0.1, 16);
  std::vector<std::int32_t> a(16), b(16), t(16);
  s_train.sample(1, 0, 0, 16, a.data(), t.data());
  s_held.sample(1, 0, 0, 16, b.data(), t.data());
  CHECK(a != b);
}

TEST_CASE("sample: the same tokens on every mesh for one seed, other tokens for another") {
  // the single-process run on world rank 0, sent to every rank
  std::vector<std::int32_t> want(24), other(24);
  if (auto solo = test::first_ranks(1, test::current_test_name())) {
    const gpt2::Options o = options(meshes()[0]);
    want = sample_after_training(*solo, o, 5);
    other = sample_after_training(*solo, o, 6);
  }
  test::world().broadcast(Span<std::int32_t>(want), 0);
  test::world().broadcast(Span<std::int32_t>(other), 0);
  CHECK(want != other);
  for (const MeshCase& c : meshes()) {
    auto comm = test::first_ranks(c.ranks, test::current_test_name());
    if (!comm) continue;
    INFO(c.name);
    CHECK(sample_after_training(*comm, options(c), 5) == want);
  }
}

TEST_CASE("choose_token: top-k, temperature and the draw") {
  const std::vector<double> logits = {1.0, 3.0, 2.0, 3.0, -1.0};
  for (double u : {0.0, 0.5, 0.999}) CHECK(choose_token(logits, 1.0, 1, u) == 1);  // ties: id 1
  CHECK(choose_token(logits, 1.0, 2, 0.49) == 1);  // two equal logits: half each
  CHECK(choose_token(logits, 1.0, 2, 0.51) == 3);
  CHECK(choose_token(logits, 1.0, 3, 0.999) == 2);  // top-3 never draws id 0 or 4
  CHECK(choose_token(logits, 1e-3, 5, 0.6) == 3);   // cold: the two largest only
  // softmax(logits / T): with T = 1, p(id 0) = e^1 / (e^1 + 2 e^3 + e^2 + e^-1)
  const double z = std::exp(1.0) + 2 * std::exp(3.0) + std::exp(2.0) + std::exp(-1.0);
  const double below = (2 * std::exp(3.0) + std::exp(2.0)) / z;  // ids 1, 3, 2 come first
  CHECK(choose_token(logits, 1.0, 5, below - 1e-9) == 2);
  CHECK(choose_token(logits, 1.0, 5, below + 1e-9) == 0);
  // the draws are uniform: the mean of 10000 is 1/2 within 4 standard deviations
  double mean = 0;
  for (int i = 0; i < 10000; ++i) mean += uniform_draw(7, i) / 10000;
  CHECK(std::abs(mean - 0.5) < 4 * std::sqrt(1.0 / 12 / 10000));
}

TEST_CASE("sampling options: bad values are one clear Error") {
  auto message = [](SampleOptions s) {
    try {
      validate(s, 67);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message({-1, 1.0, 1, 1}) == "--sample must be at least 0 tokens, got -1");
  CHECK(message({4, 0.0, 1, 1}) == "--temperature must be a finite number > 0, got 0");
  CHECK(message({4, -2.0, 1, 1}) == "--temperature must be a finite number > 0, got -2");
  CHECK(message({4, 1.0, 0, 1}) == "--top-k must be between 1 and the vocabulary of 67, got 0");
  CHECK(message({4, 1.0, 68, 1}) == "--top-k must be between 1 and the vocabulary of 67, got 68");
  CHECK(message({4, 1.0, 67, 1}).empty());
}
