// Memory and communication accounting against the papers' formulas, read off real buffers
// (MemoryStats) and real calls (CommStats):
//  - model states per rank: (2+2+K)Psi, 4Psi + K Psi/Nd, 2Psi + (2+K)Psi/Nd, (2+2+K)Psi/Nd
//    (ZeRO paper §5, plan::model_state_bytes) with this run's byte sizes, Psi counted with
//    partition padding;
//  - DP volume per step in the paper's units (§7.2): 2 Psi for stages 0-2, 3 Psi for stage 3;
//  - TP: per block and microbatch 2 all-reduces of b*s*h in forward and 2 in backward
//    (Megatron-LM §3); with SP an all-gather and a reduce-scatter of the same bytes instead.
//  - PP: b*s*h per microbatch per stage boundary sent, none between chunks of one rank (PP = 1).
#include <unistd.h>

#include <cstdio>

#include <trident/io/train_cli.hpp>
#include <trident/models/gpt2/gpt2.hpp>
#include <trident/train/formulas.hpp>
#include <trident/train/report.hpp>

#include "parity.hpp"

using namespace trident;

namespace {
template <class T, class S = T>
std::unique_ptr<gpt2::Trainer<T, S>> trainer(const Comm& comm, gpt2::Options o) {
  return std::make_unique<gpt2::Trainer<T, S>>(comm, o, TokenSource::synthetic(o.model.vocab));
}
double held(MemoryKind k) {
  return double(memory_stats().current(k));
}
}  // namespace

TEST_CASE("model-state memory per rank equals the ZeRO paper's formula, fp32 and bf16 mixed") {
  TRIDENT_RANKS(4, comm);
  for (int stage = 0; stage <= 3; ++stage)
    for (bool mixed : {false, true}) {
      gpt2::Options o = test::small_options({2, 1, 2});
      o.zero = ZeroPolicy{stage};
      INFO("ZeRO-" << stage << (mixed ? " bf16" : " fp32"));
      auto check = [&](auto& t, double P, double K) {
        const double psi = double(local_parameters(*t));
        const double paper =
            plan::model_state_bytes(psi, stage, 2, plan::Precision{"", P, P, K, 0}).total();
        const double measured = held(MemoryKind::parameters) + held(MemoryKind::gradients) +
                                held(MemoryKind::optimizer);
        CHECK(measured == paper);
        CHECK(model_state_formula(*t).total() == paper);
        // Psi is the rank's model-parallel shard, padded to a multiple of Nd per unit
        const double unpadded = double(o.model.parameter_count()) / 2;  // TP=2 halves it...
        CHECK(psi >= unpadded * 0.95);  // ...except the replicated LayerNorms and biases
      };
      if (mixed) {
        auto t = trainer<float, bf16>(comm, o);
        check(t, 2, 12);  // the paper's mixed precision: 2 + 2 + 12
      } else {
        auto t = trainer<float>(comm, o);
        check(t, 4, 8);  // fp32 Adam: parameters 4, gradients 4, two moments 8
      }
    }
}

TEST_CASE("DP traffic per step: 2 Psi for ZeRO 0-2 and 3 Psi for ZeRO-3, counted by CommStats") {
  TRIDENT_RANKS(4, comm);
  for (int stage = 0; stage <= 3; ++stage) {
    gpt2::Options o = test::small_options({1, 2, 2});
    o.zero = ZeroPolicy{stage};
    o.batch = 4;
    auto t = trainer<double>(comm, o);
    comm_stats().reset();
    (void)t->step();
    const double psi = double(local_parameters(*t)) * sizeof(double);
    const double volume = double(comm_stats().of("dp").paper_volume());
    INFO("ZeRO-" << stage << " stage " << t->mesh().stage());
    if (stage < 3) CHECK(volume == 2 * psi);
    // ZeRO-3 gathers each unit before its forward and its backward; the embedding's backward
    // needs no parameters (the first stage saves the gathers of wte and wpe)
    if (stage == 3 && t->mesh().is_last_stage()) CHECK(volume == 3 * psi);
    if (stage == 3 && t->mesh().is_first_stage()) {
      UnitStore<double>& st = t->chunk(0).store();
      const double embedding =
          double(st.padded(st.find("wte")) + st.padded(st.find("wpe"))) * sizeof(double);
      CHECK(volume == 3 * psi - embedding);
    }
    CHECK(double(comm_stats().of("dp").total().bytes) == traffic_formula(*t).dp);
  }
}

TEST_CASE(
    "TP traffic: 2 all-reduces of b*s*h per block half and microbatch; SP moves the same bytes") {
  TRIDENT_RANKS(2, comm);
  double volume[2] = {0, 0}, sync = 0;
  for (bool sp : {false, true}) {
    gpt2::Options o = test::small_options({2, 1, 1});
    o.sequence_parallel = sp;
    o.microbatches = 2;
    o.batch = 4;
    auto t = trainer<double>(comm, o);
    comm_stats().reset();
    (void)t->step();
    const CommCounts tp = comm_stats().of("tp");
    const double bsh =
        double(o.model.seq) * o.rows_per_microbatch() * o.model.hidden * sizeof(double);
    const double bs = double(o.model.seq) * o.rows_per_microbatch() * sizeof(double);
    const int L = o.model.layers, m = o.microbatches;
    INFO(std::string(sp ? "with SP" : "without SP"));
    if (!sp) {
      // blocks: 2 in forward and 2 in backward; the embedding's g and the head's f; the
      // cross-entropy's maxima (b s) and sums with target logits (2 b s)
      CHECK(tp[CommOp::all_reduce].calls == std::uint64_t(m * (4 * L + 2 + 2)));
      CHECK(double(tp[CommOp::all_reduce].bytes) == m * ((4 * L + 2) * bsh + 3 * bs));
      CHECK(tp[CommOp::all_gather].calls + tp[CommOp::reduce_scatter].calls == 0);
    } else {
      // each of those all-reduces of b s h becomes an all-gather + a reduce-scatter
      CHECK(tp[CommOp::all_gather].calls == std::uint64_t(m * (4 * L + 2)));
      CHECK(tp[CommOp::reduce_scatter].calls == std::uint64_t(m * (4 * L + 2)));
      CHECK(double(tp[CommOp::all_gather].bytes) == m * (4 * L + 2) * bsh);
      CHECK(double(tp[CommOp::reduce_scatter].bytes) == m * (4 * L + 2) * bsh);
      // left as all-reduces: the cross-entropy's, and once per step the replicated gradients
      CHECK(tp[CommOp::all_reduce].calls == std::uint64_t(m * 2 + 1));
      sync = double(tp[CommOp::all_reduce].bytes) - m * 3 * bs;
    }
    volume[sp] = double(tp.paper_volume());
    CHECK(double(tp.total().bytes) == traffic_formula(*t).tp);
  }
  // the same traffic in the paper's units, but for SP's once-per-step gradient all-reduce
  CHECK(volume[1] - 2 * sync == volume[0]);
}

TEST_CASE("the cost of ZeRO-2/3's choices with m microbatches: DP bytes and gradient memory") {
  TRIDENT_RANKS(2, comm);
  const int m = 3;
  struct Choice {
    ZeroPolicy zero;
    double volume;  // DP traffic per step in units of Psi (the paper's units: all-reduce = 2)
  };
  // per microbatch: m reduce-scatters; per step: one. ZeRO-3 gathers before every forward and
  // backward (2 m, less the embedding's backward), or once per step when kept gathered.
  const Choice choices[] = {{ZeroPolicy{2, GradReduce::per_microbatch}, m + 1.0},
                            {ZeroPolicy{2, GradReduce::per_step}, 1 + 1.0},
                            {ZeroPolicy{3, GradReduce::per_step, true}, 1 + 1.0}};
  for (const Choice& c : choices) {
    gpt2::Options o = test::small_options({1, 1, 2});
    o.zero = c.zero;
    o.microbatches = m;
    o.batch = 2 * m;
    auto t = trainer<double>(comm, o);
    comm_stats().reset();
    memory_stats().reset_peaks();
    (void)t->step();
    const double psi = double(local_parameters(*t)) * sizeof(double);
    INFO("ZeRO-" << c.zero.stage
                 << std::string(c.zero.reduce == GradReduce::per_step ? " per step"
                                                                      : " per microbatch")
                 << std::string(c.zero.keep_gathered ? ", kept gathered" : ""));
    CHECK(double(comm_stats().of("dp").paper_volume()) == c.volume * psi);
    CHECK(double(comm_stats().of("dp").total().bytes) == traffic_formula(*t).dp);
    // reducing once per step holds a full gradient during the step (stage 1's memory)
    const double peak = double(memory_stats().peak(MemoryKind::gradients));
    if (c.zero.reduce == GradReduce::per_step) CHECK(peak >= psi);
    if (c.zero.reduce == GradReduce::per_microbatch) CHECK(peak == psi / 2);
  }
}

TEST_CASE("the buffer cache holds at most the high-water mark of live buffers") {
  // live + cached <= the most bytes ever live at once: a run of ever larger blocks, each freed
  // before the next, leaves at most one of them cached (an unbounded cache would keep them all)
  const auto live = [] {
    std::size_t bytes = 0;
    for (int k = 0; k < kMemoryKinds; ++k) bytes += memory_stats().current(MemoryKind(k));
    return bytes;
  };
  const std::size_t MiB = std::size_t(1) << 20, base = peak_live_buffer_bytes();
  for (std::size_t i = 1; i <= 8; ++i) {
    Buffer<char> b(MemoryKind::buffers, base + i * MiB, Fill::none);
    CHECK(live() + cached_buffer_bytes() <= peak_live_buffer_bytes());
    b.reset();
    CHECK(live() + cached_buffer_bytes() <= peak_live_buffer_bytes());
  }
  CHECK(cached_buffer_bytes() <= peak_live_buffer_bytes());
  CHECK(peak_live_buffer_bytes() >= base + 8 * MiB);
  // the same size again comes from the cache: nothing new is allocated, the bound holds
  const std::size_t cached = cached_buffer_bytes();
  Buffer<char> again(MemoryKind::buffers, base + 8 * MiB, Fill::none);
  CHECK(cached_buffer_bytes() == cached - (base + 8 * MiB));
}

TEST_CASE("PP traffic: b*s*h per microbatch and stage boundary sent; none when PP = 1") {
  for (int p : {1, 2}) {  // interleaved, v = 2: PP = 1 keeps both chunks on one rank
    auto one = test::first_ranks(p, test::current_test_name());  // collective over the world
    if (!one) continue;
    gpt2::Options o = test::small_options({1, p, 1});
    o.schedule = pp::ScheduleKind::interleaved;
    o.virtual_stages = 2;
    o.microbatches = 2;
    o.batch = 4;
    auto t = trainer<double>(*one, o);
    comm_stats().reset();
    (void)t->step();
    const double sent = double(comm_stats().of("pp")[CommOp::send].bytes);
    const double bsh =
        double(o.model.seq) * o.rows_per_microbatch() * o.model.hidden * sizeof(double);
    INFO("PP=" << p);
    CHECK(traffic_formula(*t).pp == sent);
    // PP = 2, v = 2: 4 virtual stages, 3 boundaries; this rank sends on 2 of its 3 sides
    // (stage 0: 0|1 fwd, 1|2 bwd, 2|3 fwd; stage 1: 0|1 bwd, 1|2 fwd, 2|3 bwd), per microbatch
    CHECK(sent == (p == 1 ? 0.0 : 3 * o.microbatches * bsh));
  }
}

// A stage boundary inside a layer (nn/block_halves.hpp): each half makes half the layer's TP
// calls, and the split layer's tied gradient is summed over the embedding group (first and last
// pipeline rank) or sent over PP (neighbours): train/formulas.hpp's traffic, axis by axis,
// against what CommStats counted.
TEST_CASE("traffic with stage boundaries inside layers: the formula is what is sent") {
  struct Case {
    MeshShape mesh;
    std::vector<double> split;
  };
  for (const Case& k : {Case{{2, 2, 1}, {2.5, 1.5}}, Case{{1, 4, 1}, {1.5, 1, 1, 0.5}}}) {
    auto comm = test::first_ranks(4, test::current_test_name());
    if (!comm) continue;
    gpt2::Options o = test::small_options(k.mesh);
    o.microbatches = 2;
    o.batch = 4;
    o.pp_layers = k.split;
    auto t = trainer<double>(*comm, o);
    comm_stats().reset();
    (void)t->step();
    const Traffic f = traffic_formula(*t);
    INFO("TP" << k.mesh.tp << "-PP" << k.mesh.pp << " rank " << comm->rank());
    CHECK(double(comm_stats().of("tp").total().bytes) == f.tp);
    CHECK(double(comm_stats().of("pp")[CommOp::send].bytes) == f.pp);
    CHECK(double(comm_stats().of("emb").total().bytes) == f.emb);
    // every rank of PP=4 but the last holds the first half of a split layer or the second
    const int stage = t->mesh().stage();
    if (k.mesh.pp == 4 && stage < 3) CHECK(f.pp > 0);
  }
}

// The run report's bubble (train/report.hpp): the idle share of all ranks' steps, and the busiest
// rank's alone (the schedule's fill and drain on the critical stage), read off the same
// intervals; equal with one stage, never larger with two.
TEST_CASE("run report: the bubble of all ranks and of the busiest rank") {
  for (int p : {1, 2}) {
    auto comm = test::first_ranks(p, test::current_test_name());  // collective over the world
    if (!comm) continue;
    gpt2::Options o = test::small_options({1, p, 1});
    o.microbatches = 2;
    o.batch = 4;
    auto t = trainer<double>(*comm, o);
    std::vector<StepResult> measured;
    for (int step = 0; step < 2; ++step) measured.push_back(t->step());
    const RunReport r = make_report(*t, measured);
    if (comm->rank() != 0) continue;
    double most = 0, makespan = 0, compute = 0;
    for (const RankFigures& f : r.ranks) {
      most = std::max(most, f.compute);
      makespan = std::max(makespan, f.end);
      compute += f.compute;
    }
    INFO("PP=" << p);
    CHECK(r.bubble == doctest::Approx(1 - compute / (p * makespan)).epsilon(1e-12));
    CHECK(r.busiest_idle == doctest::Approx(1 - most / makespan).epsilon(1e-12));
    CHECK(r.busiest_idle <= r.bubble + 1e-12);
    if (p == 1) CHECK(r.busiest_idle == doctest::Approx(r.bubble).epsilon(1e-12));
    if (p == 2) CHECK(r.busiest_idle > 0);  // the last stage waits for the first forward
  }
}

TEST_CASE("the buffer cache makes room with the smallest block that suffices, not the largest") {
  // A step's small temporaries of new sizes must not cost it its largest activation: with the
  // cache at its bound, a 32 KiB block of a new size frees a cached block of >= 32 KiB, and the
  // large block stays cached (freeing the largest first, it would be faulted in again).
  const std::size_t KiB = 1024, X = peak_live_buffer_bytes() + 16 * 1024 * KiB;  // the largest
  {
    Buffer<char> large(MemoryKind::buffers, X, Fill::none);
    Buffer<char> small(MemoryKind::buffers, 64 * KiB, Fill::none);
  }
  REQUIRE(cached_buffer_bytes() >= X + 64 * KiB);
  Buffer<char> temporary(MemoryKind::buffers, 32 * KiB, Fill::none);
  CHECK(cached_buffer_bytes() >= X);
  const std::size_t cached = cached_buffer_bytes();
  Buffer<char> again(MemoryKind::buffers, X, Fill::none);  // from the cache
  CHECK(cached_buffer_bytes() == cached - X);
}

TEST_CASE("one layer's activations per microbatch: measured equals the model's formula") {
  struct Case {
    MeshShape mesh;
    bool sp;
    int cp;
  };
  for (const Case k : {Case{{1, 1, 1}, false, 1}, Case{{2, 1, 1}, false, 1},
                       Case{{2, 1, 1}, true, 1}, Case{{1, 1, 1}, false, 2}}) {
    auto comm = test::first_ranks(k.mesh.tp * k.cp, test::current_test_name());
    if (!comm) continue;
    gpt2::Options o = test::small_options(k.mesh);
    o.sequence_parallel = k.sp;
    o.mesh.cp = k.cp;
    auto t = trainer<float>(*comm, o);
    (void)t->step();
    INFO("TP" << k.mesh.tp << (k.sp ? " SP" : "") << " CP" << k.cp);
    CHECK(t->chunk(0).layer_activation_bytes() > 0);
    CHECK(t->chunk(0).layer_activation_bytes() == layer_activation_formula(*t));
  }
}

namespace {
// What f() prints on stdout.
template <class F>
std::string printed(F&& f) {
  std::fflush(stdout);
  std::FILE* out = std::tmpfile();
  const int saved = dup(1);
  dup2(fileno(out), 1);
  f();
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  std::rewind(out);
  std::string text;
  for (int ch; (ch = std::fgetc(out)) != EOF;) text += char(ch);
  std::fclose(out);
  return text;
}
}  // namespace

TEST_CASE("progress lines: a gradient-norm spike is marked, and explained only where asked") {
  TRIDENT_RANKS(1, comm);
  (void)comm;
  const std::vector<double> norms = {1.0, 1.2, 0.9, 1.1, 1.0, 0.8};
  CHECK_FALSE(gradient_spike(norms, 4.9));
  CHECK(gradient_spike(norms, 5.1));          // over 5x the median, 1.0
  CHECK_FALSE(gradient_spike({1, 1, 1}, 9));  // fewer than 5 norms: no median to speak of
  StepResult r;
  r.loss = 5;
  r.grad_norm = 5.1;
  r.lr = 1e-3;
  r.seconds = 1;
  const std::string first = printed([&] { print_step(10, r, 100, 3, true, 1.0, true); }),
                    again = printed([&] { print_step(11, r, 100, 4, true, 1.0, false); });
  CHECK(first.find(" | spike\n  spike: the gradient norm is over 5x the recent median") !=
        std::string::npos);
  CHECK(again.find(" | spike\n") != std::string::npos);
  CHECK(again.find("recent median") == std::string::npos);  // explained once per run
}

TEST_CASE("the report prints a model's undeclared formulas as not declared, never another's") {
  TRIDENT_RANKS(1, comm);
  (void)comm;
  struct Undeclared {};
  static_assert(!declares_tp_collectives<Undeclared>::value &&
                !declares_activation_formula<Undeclared>::value);
  static_assert(declares_tp_collectives<gpt2::Model>::value &&
                declares_activation_formula<gpt2::Model>::value);
  RunReport r;
  r.ranks.resize(1);
  r.ranks[0].formula.tp = r.ranks[0].layer_formula = std::nan("");  // as formulas.hpp gives them
  r.ranks[0].layer_activations = 3 * 1024 * 1024;
  TrainOptions o;
  o.mesh = {2, 1, 1};
  const std::string text = printed([&] { print_report(r, gpt2::Model(gpt2::Config{}), o); });
  CHECK(text.find("measured 3.000 (MemoryStats), the model's formula not declared") !=
        std::string::npos);
  CHECK(text.find("n/d: not declared: the model declares no TP collectives") != std::string::npos);
}
