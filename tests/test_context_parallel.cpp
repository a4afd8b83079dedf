// Context parallelism (cp/): ring attention against one rank's attention over the whole
// sequence (outputs, kept probabilities, input gradients; zigzag and contiguous, multi-head and
// grouped-query), and whole training runs at CP 2 and 4 and composed with TP (and SP), PP (1F1B,
// ZB-H1), DP with ZeRO-3 and recomputation against the single-process reference in double
// (GPT-2: gpt2::ReferenceGPT; Llama with GQA: its own single-process run), bitwise reruns, and
// the bad input.
#include <trident/models/llama/llama.hpp>
#include <trident/train/formulas.hpp>

#include <cstring>
#include <random>

#include "model_parity.hpp"
#include "parity.hpp"

using namespace trident;

namespace {

// Ring attention on `cp` ranks against nn::attention on the whole sequence (each rank computes
// the whole and compares its own tokens' rows).
void check_ring_attention(int cp, CpSplit split, int H, int KV, int T = 16) {
  auto comm = test::first_ranks(cp, test::current_test_name());
  if (!comm) return;
  INFO("CP=" << cp << " " << std::string(to_string(split)) << " H=" << H << " KV=" << KV
             << " T=" << T);
  const int batch = 2, D = 4, W = (H + 2 * KV) * D, Tl = T / cp;
  std::mt19937_64 gen(3);
  std::normal_distribution<double> normal;
  std::vector<double> qkv(std::size_t(T) * batch * W), dout(std::size_t(T) * batch * H * D);
  for (double& x : qkv) x = normal(gen);
  for (double& x : dout) x = normal(gen);
  // the whole sequence on one rank
  std::vector<double> out(dout.size()), probs(std::size_t(batch) * H * T * T), dqkv(qkv.size());
  nn::attention_forward(out.data(), probs.data(), qkv.data(), batch, T, H, KV, D);
  nn::attention_backward(dqkv.data(), dout.data(), qkv.data(), probs.data(), batch, T, H, KV, D);
  // this rank's rows of a [s, b] matrix `width` wide
  ContextParallel<backend::Cpu> ring{
      backend::DeviceComm<backend::Cpu>(*comm, backend::CollectivePath::mpi), split};
  const nn::TokenPositions at = ring.positions(Tl);
  auto mine = [&](const std::vector<double>& m, int width) {
    std::vector<double> local(std::size_t(Tl) * batch * width);
    for (int s = 0; s < Tl; ++s)
      std::memcpy(&local[std::size_t(s) * batch * width], &m[std::size_t(at(s)) * batch * width],
                  sizeof(double) * batch * width);
    return local;
  };
  const std::vector<double> qkv_l = mine(qkv, W), dout_l = mine(dout, H * D);
  std::vector<double> out_l(dout_l.size()), probs_l(std::size_t(batch) * H * Tl * T),
      dqkv_l(qkv_l.size());
  ring_attention_forward(ring, out_l.data(), probs_l.data(), qkv_l.data(), batch, Tl, H, KV, D);
  ring_attention_backward(ring, dqkv_l.data(), dout_l.data(), qkv_l.data(), out_l.data(),
                          probs_l.data(), batch, Tl, H, KV, D);
  auto worst = [](const std::vector<double>& a, const std::vector<double>& b) {
    double w = 0;
    for (std::size_t i = 0; i < a.size(); ++i) w = std::max(w, std::abs(a[i] - b[i]));
    return w;
  };
  CHECK(worst(out_l, mine(out, H * D)) < 1e-12);
  CHECK(worst(dqkv_l, mine(dqkv, W)) < 1e-12);
  // row (b, h, s) of the local probabilities is row (b, h, at(s)), defined up to at(s)
  double p_worst = 0;
  for (int bh = 0; bh < batch * H; ++bh)
    for (int s = 0; s < Tl; ++s)
      for (int j = 0; j <= at(s); ++j)
        p_worst = std::max(p_worst, std::abs(probs_l[(std::size_t(bh) * Tl + s) * T + j] -
                                             probs[(std::size_t(bh) * T + at(s)) * T + j]));
  CHECK(p_worst < 1e-14);
  // and bitwise the same on a rerun
  std::vector<double> again(out_l.size()), probs2(probs_l.size());
  ring_attention_forward(ring, again.data(), probs2.data(), qkv_l.data(), batch, Tl, H, KV, D);
  CHECK(std::memcmp(again.data(), out_l.data(), again.size() * sizeof(double)) == 0);
}

// GPT-2 as a model that does not declare a context-parallel Stage (model/model.hpp).
struct NoRing : gpt2::Model {
  using gpt2::Model::Model;
  static constexpr bool kContextParallel = false;
};

gpt2::Options cp_options(MeshShape mesh, CpSplit split = CpSplit::zigzag) {
  gpt2::Options o = test::small_options(mesh);
  o.cp_split = split;
  o.batch = 2 * mesh.dp;
  return o;
}

template <class B>
void run_gpt2_on(int ranks, const gpt2::Options& o, const char* what) {
  auto comm = test::first_ranks(ranks, test::current_test_name());
  if (!comm) return;
  INFO(what);
  test::check_parity<double, double, B>(*comm, o, 3, 1e-10);
}
void run_gpt2(int ranks, const gpt2::Options& o, const char* what) {
  run_gpt2_on<backend::Cpu>(ranks, o, what);
}

}  // namespace

TEST_CASE("ring attention equals one rank's attention: CP 2 and 4, zigzag and contiguous, GQA") {
  for (int cp : {2, 4})
    for (CpSplit split : {CpSplit::zigzag, CpSplit::contiguous}) {
      check_ring_attention(cp, split, 4, 4);
      check_ring_attention(cp, split, 4, 2);
    }
  // chunks longer than the kernels' tiles (cp_detail::kTile = 64): 80 and 160 tokens
  check_ring_attention(2, CpSplit::zigzag, 2, 1, 320);
  check_ring_attention(2, CpSplit::contiguous, 2, 1, 320);
}

TEST_CASE("the zigzag split: rank r holds chunks r and 2cp-1-r, positions in order") {
  const auto c = cp_chunks(16, 4, 1, CpSplit::zigzag);
  REQUIRE(c.size() == 2);
  CHECK(c[0] == std::pair<int, int>{2, 2});
  CHECK(c[1] == std::pair<int, int>{12, 2});
  const nn::TokenPositions p = cp_positions(16, 4, 1, CpSplit::zigzag);
  CHECK(p(0) == 2);
  CHECK(p(1) == 3);
  CHECK(p(2) == 12);
  CHECK(p(3) == 13);
  CHECK(cp_positions(16, 4, 3, CpSplit::contiguous)(1) == 13);
}

TEST_CASE("gpt2: CP 2 and 4, zigzag and contiguous, match the single-process reference") {
  run_gpt2(2, cp_options({1, 1, 1, 2}), "CP=2 zigzag");
  run_gpt2(2, cp_options({1, 1, 1, 2}, CpSplit::contiguous), "CP=2 contiguous");
  run_gpt2(4, cp_options({1, 1, 1, 4}), "CP=4 zigzag");
  run_gpt2(4, cp_options({1, 1, 1, 4}, CpSplit::contiguous), "CP=4 contiguous");
}

TEST_CASE("gpt2: CP composed with TP (and SP), PP (1F1B, ZB-H1), DP with ZeRO-3, recompute") {
  gpt2::Options sp = cp_options({2, 1, 1, 2});
  sp.sequence_parallel = true;
  run_gpt2(4, cp_options({2, 1, 1, 2}), "TP2-CP2");
  run_gpt2(4, sp, "TP2-CP2 with SP");
  for (pp::ScheduleKind kind : {pp::ScheduleKind::one_f_one_b, pp::ScheduleKind::zb_h1}) {
    gpt2::Options o = cp_options({1, 2, 1, 2});
    o.schedule = kind;
    o.microbatches = 2;
    o.batch = 4;
    run_gpt2(4, o, pp::to_string(kind));
  }
  gpt2::Options zero = cp_options({1, 1, 2, 2});
  zero.zero = ZeroPolicy{3};
  run_gpt2(4, zero, "CP2-DP2 ZeRO-3");
  gpt2::Options full = cp_options({1, 1, 1, 2});
  full.recompute = Recompute::full;
  run_gpt2(2, full, "CP2 with full recomputation");
  gpt2::Options eight = cp_options({2, 1, 2, 2});
  eight.zero = ZeroPolicy{1};
  run_gpt2(8, eight, "TP2-CP2-DP2 ZeRO-1");
}

TEST_CASE("llama with GQA at CP 2 (and TP2-CP2) matches its single-process run") {
  const llama::Config c = test::small_llama(2);
  for (MeshShape mesh : {MeshShape{1, 1, 1, 2}, MeshShape{2, 1, 1, 2}}) {
    auto comm = test::first_ranks(mesh.product(), test::current_test_name());
    if (!comm) continue;
    INFO("TP=" << mesh.tp << " CP=" << mesh.cp);
    TrainOptions o;
    o.mesh = mesh;
    o.batch = 4;
    o.optimizer = test::small_optimizer();
    TrainOptions one = o;
    one.mesh = {1, 1, 1};
    const TokenSource data = TokenSource::synthetic(c.vocab);
    const Comm self = comm->split(comm->rank(), 0, "self");
    llama::Trainer<double> run(*comm, llama::Model(c), o, data);
    llama::Trainer<double> ref(self, llama::Model(c), one, data);
    test::check_against_single_process(run, ref, 3, 1e-10);
  }
}

TEST_CASE("CP reruns are bitwise identical") {
  TRIDENT_RANKS(4, comm);
  const gpt2::Options o = cp_options({1, 1, 1, 4});
  const TokenSource data = TokenSource::synthetic(o.model.vocab);
  double first[2] = {0, 0};
  for (int run = 0; run < 2; ++run) {
    gpt2::Trainer<double> t(comm, o, data);
    StepResult r = t.step();
    r = t.step();
    const double now[2] = {r.loss, r.grad_norm};
    if (run == 0) std::memcpy(first, now, sizeof now);
    if (run == 1) CHECK(std::memcmp(first, now, sizeof now) == 0);
  }
}

TEST_CASE("CP bad input: a sequence not divisible into chunks, a mesh not the world, no ring") {
  TRIDENT_RANKS(2, comm);
  const TokenSource data = TokenSource::synthetic(67);
  gpt2::Options o = cp_options({1, 1, 1, 2});
  o.model.seq = 18;  // 18 tokens: not 4 zigzag chunks
  CHECK_THROWS_WITH_AS(gpt2::Trainer<double>(comm, o, data),
                       doctest::Contains("not divisible into 4 chunks (zigzag split"), Error);
  o.cp_split = CpSplit::contiguous;
  o.model.seq = 17;
  CHECK_THROWS_WITH_AS(gpt2::Trainer<double>(comm, o, data),
                       doctest::Contains("not divisible into 2 chunks (contiguous"), Error);
  o = cp_options({1, 1, 1, 4});
  CHECK_THROWS_WITH_AS(gpt2::Trainer<double>(comm, o, data),
                       doctest::Contains("x CP=4 x PP=1 x DP=1 = 4 ranks, but the world has 2"),
                       Error);
  o = cp_options({1, 1, 1, 2});
  CHECK_THROWS_WITH_AS((Trainer<NoRing, double>(comm, NoRing(o.model), o, data)),
                       doctest::Contains("does not split its sequences over a ring"), Error);
}

TEST_CASE("CP 2 and TP2-CP2 on the emulated device match the single-process reference") {
  run_gpt2_on<backend::Emulated>(2, cp_options({1, 1, 1, 2}), "CP=2 emulated");
  run_gpt2_on<backend::Emulated>(4, cp_options({2, 1, 1, 2}), "TP2-CP2 emulated");
}

TEST_CASE("CP traffic to the byte and attention's kept probabilities 1/cp of one rank's") {
  TRIDENT_RANKS(4, comm);
  const TokenSource data = TokenSource::synthetic(67);
  for (Recompute recompute : {Recompute::none, Recompute::full}) {
    gpt2::Options o = cp_options({1, 1, 2, 2});
    o.zero = ZeroPolicy{2};
    o.recompute = recompute;
    o.microbatches = 2;
    o.batch = 4;
    gpt2::Trainer<double> t(comm, o, data);
    comm_stats().reset();
    (void)t.step();
    const Traffic f = traffic_formula(t);
    INFO("recompute " << std::string(to_string(recompute)));
    // per layer and microbatch: (cp - 1) blocks forward, 2 (cp - 1) backward, a block being the
    // rank's 8 tokens x 1 sequence x (K, V) of 32 features
    const double block = 8 * 1 * 2 * 32 * sizeof(double);
    CHECK(f.cp == 2 * 4 * (recompute == Recompute::full ? 4 : 3) * block);
    CHECK(double(comm_stats().of("cp")[CommOp::send].bytes) == f.cp);
    CHECK(double(comm_stats().of("dp_cp").total().bytes) == f.dp);  // ZeRO over DP x CP
    CHECK(comm_stats().of("dp").total().bytes == 0);
  }
  // one block's activations: probabilities (b, H, T/cp, T) against (b, H, T, T) without CP
  auto probs_bytes = [&](int cp) {
    const Comm ranks = comm.split(comm.rank() < cp ? 0 : Comm::kUndefined, comm.rank(), "probs");
    if (!ranks.valid()) return std::size_t(0);
    const gpt2::Config c = test::small_model();
    TensorParallel<backend::Cpu> tp(nullptr);
    const Comm self = ranks.split(ranks.rank(), 0, "self");
    tp = TensorParallel<backend::Cpu>(&self);
    tp.cp = {cp > 1 ? backend::DeviceComm<backend::Cpu>(ranks, backend::CollectivePath::mpi)
                    : backend::DeviceComm<backend::Cpu>(),
             CpSplit::zigzag};
    gpt2::Block<double, backend::Cpu> block(c, tp, 2);
    gpt2::Block<double, backend::Cpu>::Activations a;
    a.x.allocate(MemoryKind::activations, block.activation_size());
    const std::vector<double> w(layout_unit(gpt2::block_unit(c, 0), 1, 0).numel, 0.01);
    backend::DeviceBuffer<double, backend::Cpu> out(MemoryKind::buffers, block.activation_size());
    block.forward(a, out.data(), w.data());
    return a.probs.bytes();
  };
  const std::size_t one = probs_bytes(1), two = probs_bytes(2), four = probs_bytes(4);
  if (comm.rank() == 0) {  // in all three runs
    CHECK(one == std::size_t(2) * 8 * 16 * 16 * sizeof(double));
    CHECK(two * 2 == one);
    CHECK(four * 4 == one);
  }
}
