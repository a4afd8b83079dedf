// plan/: the cost model against the papers' own numbers and small cases worked by hand, and
// the planner's answer to "with ZeRO, why 3D?" for GPT-3 175B on 1024 A100s.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <trident/nn/flops.hpp>
#include <trident/plan/balance.hpp>
#include <trident/plan/plan.hpp>

using namespace trident;
using namespace trident::plan;

namespace {
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A model small enough to work by hand: s = 4, b = 2, h = 8, a = 2, so s b h = 64.
const ModelSpec tiny{"tiny", 4, 8, 2, 16, 4};
}  // namespace

TEST_CASE("ZeRO model states: Table 1 of the ZeRO paper, 7.5B parameters, as printed") {
  // Rajbhandari et al. 2020, Table 1 (Psi = 7.5B, K = 12): per-GPU GB for Nd = 1 ... 1024.
  struct Row {
    int nd;
    const char* gb[4];
  };
  const Row rows[] = {
      {1, {"120", "120", "120", "120"}},      {4, {"120", "52.5", "41.3", "30"}},
      {16, {"120", "35.6", "21.6", "7.5"}},   {64, {"120", "31.4", "16.6", "1.88"}},
      {256, {"120", "30.4", "15.4", "0.47"}}, {1024, {"120", "30.1", "15.1", "0.12"}}};
  for (const Row& row : rows)
    for (int stage = 0; stage <= 3; ++stage) {
      CAPTURE(row.nd);
      CAPTURE(stage);
      CHECK(paper_gb(model_state_bytes(7.5e9, stage, row.nd, Precision::mixed()).total()) ==
            row.gb[stage]);
    }
  // The kinds: stage 2 with Nd = 64 is 2 Psi of parameters + (2 + 12) Psi / 64.
  const ModelStateBytes s2 = model_state_bytes(7.5e9, 2, 64, Precision::mixed());
  CHECK(s2.params == 15e9);
  CHECK(s2.grads == doctest::Approx(2 * 7.5e9 / 64));
  CHECK(s2.optimizer == doctest::Approx(12 * 7.5e9 / 64));
  // fp32 Adam: 4 + 4 + 8 bytes per parameter, 16 Psi unpartitioned as well.
  CHECK(model_state_bytes(1e9, 0, 8, Precision::fp32()).total() == 16e9);
  CHECK(model_state_bytes(1e9, 1, 8, Precision::fp32()).total() == 9e9);
}

TEST_CASE("parameters: Narayanan's formula and the exact count from the layer shapes") {
  const ModelSpec gpt2 = preset("gpt2");
  CHECK(parameter_count(gpt2) == 124439808);  // Hugging Face's gpt2 has 124,439,808
  // The formula leaves out the final LayerNorm's 2h.
  CHECK(parameters_formula(gpt2) == doctest::Approx(124439808.0 - 2 * 768).epsilon(1e-12));

  const ModelSpec gpt3 = preset("gpt3-175b");
  CHECK(parameter_count(gpt3) == 174615846912);
  CHECK(std::abs(static_cast<double>(parameter_count(gpt3)) - 175e9) < 0.01 * 175e9);
  CHECK(parameters_formula(gpt3) == doctest::Approx(174615846912.0 - 2 * 12288).epsilon(1e-12));
  // Narayanan et al. 2021, Table 1 prints the 1T model as 1008.0 billion.
  CHECK(std::round(parameters_formula(preset("gpt-1t")) / 1e8) == 10080);

  CHECK(error_of([] { preset("gpt5"); }).find("unknown model preset 'gpt5'") == 0);
  // A shard with TP = 1, PP = 1 is the whole model; TP splits the big matrices.
  CHECK(shard_parameters(gpt2, 1, 1) == parameter_count(gpt2));
  CHECK(layer_shard_parameters(gpt2, 2) == (12 * 768 * 768 + 7 * 768) / 2 + 6 * 768);
}

TEST_CASE("activations: Korthikanti et al. 2022, Table 2, for s=4 b=2 h=8 a=2 by hand") {
  Config c;
  c.microbatch_size = 2;
  const Precision p = Precision::mixed();
  // no parallelism: 64 (34 + 5*2*4/8) = 64 * 39
  CHECK(layer_activation_bytes(tiny, c, p) == 2496);
  c.tp = 2;  // tensor parallel: 64 (10 + 24/2 + 5*2*4/(8*2)) = 64 * 24.5
  CHECK(layer_activation_bytes(tiny, c, p) == 1568);
  c.sequence_parallel = true;  // + sequence parallel: 64 (34/2 + 2.5)
  CHECK(layer_activation_bytes(tiny, c, p) == 1248);
  CHECK(layer_activation_bytes(tiny, c, Precision::fp32()) == 2 * 1248);
  c.recompute = Recompute::selective;  // 64 * 34/2
  CHECK(layer_activation_bytes(tiny, c, p) == 1088);
  CHECK(recompute_working_bytes(tiny, c, p) == 1248 - 1088);
  c.recompute = Recompute::full;  // 2 s b h
  CHECK(layer_activation_bytes(tiny, c, p) == 128);
  CHECK(recompute_working_bytes(tiny, c, p) == 1248);

  // The first stage's peak, in layers of one microbatch (Korthikanti §4.2.3), L = 4, p = 2:
  c = Config{1, 2, 1, 0, 1, 4};
  CHECK(activation_layers_in_flight(tiny, c) == 4);  // 1F1B: p microbatches x L/p layers = L
  c.microbatches = 1;
  CHECK(activation_layers_in_flight(tiny, c) == 2);  // only one microbatch to hold
  c.microbatches = 4;
  c.schedule = pp::ScheduleKind::gpipe;
  CHECK(activation_layers_in_flight(tiny, c) == 8);  // GPipe: all m
  c.schedule = pp::ScheduleKind::interleaved;
  c.virtual_stages = 2;
  CHECK(activation_layers_in_flight(tiny, c) == 5);  // L (1 + (p-1)/(p v)) = 4 * 1.25
}

TEST_CASE("pipeline bubble over the ideal time: (p-1)/m, interleaved (p-1)/(v m)") {
  CHECK(pp::bubble_over_ideal(1, 8) == 0);
  CHECK(pp::bubble_over_ideal(8, 96) == doctest::Approx(7.0 / 96));
  CHECK(pp::bubble_over_ideal(8, 96, 6) == doctest::Approx(7.0 / 576));
  CHECK(pp::bubble_over_ideal(4, 4) == doctest::Approx(0.75));
}

// plan/balance.hpp: the split that minimises the costliest rank, then its costliest chunk, by hand.
TEST_CASE("balanced layer split: the LM head counted, the costliest stage as cheap as can be") {
  const ModelSpec bench{"bench", 4, 256, 8, 4096, 128};  // the head weighs 1.23 layers
  const pp::StageCosts c = stage_costs(bench);
  CHECK(c.head / c.layer ==
        doctest::Approx(2.0 * 256 * 4096 / (24.0 * 256 * 256 + 4.0 * 128 * 256)));
  CHECK(balanced_layer_split(bench, 2) == std::vector<int>{3, 1});  // 3 vs 2.23, not 2 vs 3.23
  // 4 stages: the head alone on the last (1.23), one stage with 2 layers, rather than 2.23
  CHECK(balanced_layer_split(bench, 4) == std::vector<int>{1, 1, 2, 0});
  // a cheap head (V = 67: 0.16 layers) keeps the even split; 3 layers: the head's stage gets 1
  const ModelSpec small{"parity", 4, 32, 8, 67, 16};
  CHECK(balanced_layer_split(small, 2) == std::vector<int>{2, 2});
  CHECK(balanced_layer_split(small, 4) == std::vector<int>{1, 1, 1, 1});
  CHECK(balanced_layer_split(ModelSpec{"parity", 3, 32, 8, 67, 16}, 2) == std::vector<int>{2, 1});
  // 12 layers and a head of 4.9 layers over 4 stages: the head alone (4.9) beats any stage of
  // the head and a layer (5.9); the other 12 layers 4 each
  const ModelSpec big_head{"head", 12, 256, 8, 16384, 128};
  CHECK(balanced_layer_split(big_head, 4) == std::vector<int>{4, 4, 4, 0});
  CHECK_THROWS_AS(balanced_layer_split(bench, 6), Error);  // 5 stages: 4 layers and the head
}

// pp/balance.hpp with chunks: each rank's cost is the sum of its chunks'.
TEST_CASE("balanced layer split over ranks: ZB-V's V and interleaved chunks") {
  const pp::StageCosts bench = stage_costs(ModelSpec{"bench", 4, 256, 8, 4096, 128});
  const pp::ChunkMap v{pp::ChunkPlacement::v_shape, 2, 2}, looped{pp::ChunkPlacement::looped, 2, 2};
  // the V: rank 0 holds virtual stages 0 and 3 (the head: 1.23 layers), rank 1 stages 1 and 2;
  // rank 0 gets 1 layer (2.23), rank 1 3 (3), not 2 + head (3.23) against 2
  CHECK(pp::balanced_layer_split(bench, 4, v) == std::vector<int>{1, 1, 2, 0});
  // a cheap head keeps one layer per chunk
  const pp::StageCosts small = stage_costs(ModelSpec{"parity", 4, 32, 8, 67, 16});
  CHECK(pp::balanced_layer_split(small, 4, v) == std::vector<int>{1, 1, 1, 1});
  // looped, 8 layers: rank 1 holds virtual stages 1 and 3 (the head), so it gets 3 layers
  // (4.23) and rank 0 5 (5), not 4 + head against 4
  CHECK(pp::balanced_layer_split(bench, 8, looped) == std::vector<int>{2, 2, 3, 1});
  const pp::StageCosts equal{1, 0, 0};
  CHECK(pp::balanced_layer_split(equal, 8, v) == std::vector<int>{2, 2, 2, 2});
  CHECK(pp::balanced_layer_split(equal, 6, looped) == std::vector<int>{1, 1, 2, 2});
}

// pp/balance.hpp in half layers: a boundary moved into a layer, between its attention half
// (8 s h^2 + 4 s^2 h of 24 s h^2 + 4 s^2 h: 0.385 of the bench model's layer) and its MLP half.
TEST_CASE("balanced half split: a stage boundary inside a layer where that is cheaper") {
  pp::StageCosts bench = stage_costs(ModelSpec{"bench", 4, 256, 8, 4096, 128});
  CHECK(pp::balanced_half_split(bench, 4, pp::ChunkMap{pp::ChunkPlacement::looped, 2, 1}) ==
        std::vector<int>{6, 2});  // first_half 0: the whole-layer split, 3 + 1, in halves
  bench.first_half = nn::gpt_attention_half_forward_flops(128, 256, 1);
  CHECK(bench.first_half / bench.layer == doctest::Approx(0.3846).epsilon(1e-3));
  // 2 stages: 2.5 + 1.5 layers, costs 2.38 and 2.85 layers (not 3 and 2.23)
  const pp::ChunkMap two{pp::ChunkPlacement::looped, 2, 1}, v{pp::ChunkPlacement::v_shape, 2, 2};
  const std::vector<int> plain = pp::balanced_half_split(bench, 4, two);
  CHECK(plain == std::vector<int>{5, 3});
  CHECK(pp::half_split_text(plain) == "2.5+1.5");
  const std::vector<double> cost = pp::half_split_costs(bench, plain);
  CHECK(cost[0] / bench.layer == doctest::Approx(2 + 0.3846).epsilon(1e-3));
  CHECK(cost[1] == doctest::Approx(bench.layer - bench.first_half + bench.layer + bench.head));
  // ZB-V: rank 0 (virtual stages 0 and 3) gets layer 0, layer 1's attention half and the head,
  // rank 1 the rest: equal to the FLOP (2.615 layers each), then the costliest chunk as cheap
  // as can be (1.5, 1, 1.5, 0: no chunk above 1.62 layers)
  const std::vector<int> zbv = pp::balanced_half_split(bench, 4, v);
  CHECK(zbv == std::vector<int>{3, 2, 3, 0});
  const std::vector<double> c = pp::half_split_costs(bench, zbv);
  CHECK(c[0] + c[3] == doctest::Approx(c[1] + c[2]));
  // a cheap head: layers stay whole at 4 layers (2 + 2), and 3 layers split 1.5 + 1.5
  pp::StageCosts small = stage_costs(ModelSpec{"parity", 4, 32, 8, 67, 16});
  small.first_half = nn::gpt_attention_half_forward_flops(16, 32, 1);
  CHECK(pp::balanced_half_split(small, 4, two) == std::vector<int>{4, 4});
  CHECK(pp::balanced_half_split(small, 3, two) == std::vector<int>{3, 3});
}

TEST_CASE("FLOPs: 3 forwards, plus one with full recomputation (Narayanan eq. (3))") {
  const ModelSpec m = preset("gpt3-175b");
  const double B = 1536, s = m.seq, L = m.layers, h = m.hidden, V = m.vocab;
  CHECK(training_flops(m, 1536, Recompute::full) ==
        doctest::Approx(96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))));
  CHECK(training_flops(m, 1536, Recompute::none) ==
        doctest::Approx(72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h))));
  // ~ 6 x parameters x tokens: attention and the head add a few percent at s = 2048.
  const double six_pt = 6 * static_cast<double>(parameter_count(m)) * B * s;
  CHECK(training_flops(m, 1536, Recompute::none) / six_pt == doctest::Approx(1.05).epsilon(0.02));
  CHECK(training_flops(m, 1536, Recompute::selective) > training_flops(m, 1536, Recompute::none));
}

TEST_CASE("communication bytes per GPU per step, by hand") {
  const Precision p = Precision::mixed();
  Config c{2, 2, 2, 0, 2, 4};  // TP=2 PP=2 DP=2, b = 2, m = 4: b s h = 64 values = 128 bytes
  // TP: L/p = 2 layers x m = 4 x 4 all-reduces x 2 (t-1)/t x 128 bytes
  CHECK(tp_bytes(tiny, c, p) == 2 * 4 * 4 * 128);
  c.sequence_parallel = true;  // all-gather + reduce-scatter: the same bytes
  CHECK(tp_bytes(tiny, c, p) == 2 * 4 * 4 * 128);
  c.recompute = Recompute::full;  // the forward's 2 all-reduces again
  CHECK(tp_bytes(tiny, c, p) == 2 * 4 * 6 * 128);
  // PP: forward and backward, m = 4 microbatches, 1/t of 128 bytes each
  CHECK(pp_bytes(tiny, c, p) == 2 * 4 * 128 / 2);
  c.virtual_stages = 2;
  CHECK(pp_bytes(tiny, c, p) == 2 * 2 * 4 * 128 / 2);
  // DP (ZeRO §7): for one microbatch 2 Psi at stages 0-2 and 3 Psi at stage 3, ring (n-1)/n.
  c.microbatches = 1;
  for (int zero : {0, 1, 2}) {
    c.zero = zero;
    CHECK(dp_bytes(1000, c, p) == 2 * 1000 * 2 * 0.5);
  }
  c.zero = 3;
  CHECK(dp_bytes(1000, c, p) == 3 * 1000 * 2 * 0.5);
  c.microbatches = 4;  // ZeRO-3 re-gathers parameters and reduces gradients every microbatch
  CHECK(dp_bytes(1000, c, p) == 4 * 3 * 1000 * 2 * 0.5);
  c.zero = 1;  // ZeRO-1 accumulates gradients and reduces once per step
  CHECK(dp_bytes(1000, c, p) == 2 * 1000 * 2 * 0.5);
  c.zero = 2;  // ZeRO-2 reduce-scatters every microbatch, all-gathers parameters once
  CHECK(dp_bytes(1000, c, p) == (4 * 2 + 2) * 1000 * 0.5);
}

TEST_CASE("links: which axes cross nodes under rank = tp + TP*(dp + DP*pp)") {
  ClusterSpec cl;
  cl.gpus = 16;
  cl.gpus_per_node = 8;
  const auto x = [&](int tp, int pp, int dp) { return crosses_nodes(cl, Config{tp, pp, dp}); };
  CHECK(!x(8, 2, 1).tp);
  CHECK(x(8, 2, 1).pp);
  CHECK(x(16, 1, 1).tp);
  CHECK(!x(2, 2, 4).tp);
  CHECK(!x(2, 2, 4).dp);  // TP x DP = 8: a node per stage
  CHECK(x(2, 2, 4).pp);
  CHECK(x(2, 1, 8).dp);
  CHECK(!x(1, 16, 1).tp);
  cl.gpus = 12;
  cl.gpus_per_node = 6;  // TP = 4 groups {4..7} straddle the first node boundary
  CHECK(x(4, 1, 3).tp);
}

TEST_CASE("a fixed mesh whose product is not the GPU count is refused with the product") {
  ClusterSpec cl;
  cl.gpus = 128;
  const ModelSpec m = preset("gpt3-175b");
  const std::string expected = "8192 GPUs, not 128";
  CHECK(error_of([&] {
          estimate(m, cl, Config{8, 16, 64}, Precision::mixed());
        }).find(expected) != std::string::npos);
  Search fixed;
  fixed.tp = 8;
  fixed.pp = 16;
  fixed.dp = 64;
  const std::string planned =
      error_of([&] { rank_configurations(m, cl, 1536, Precision::mixed(), fixed); });
  CHECK(planned == "mesh TP=8 x PP=16 x DP=64 = 8192 GPUs, not 128");
  fixed.dp = 0;
  fixed.tp = 5;  // 5 x 16 does not divide 128, and 5 does not divide 96 heads
  CHECK(error_of([&] {
          rank_configurations(m, cl, 1536, Precision::mixed(), fixed);
        }).find("does not divide 128 GPUs") != std::string::npos);
  CHECK(invalid_reason(m, cl, Config{3, 1, 1}).find("3 GPUs, not 128") != std::string::npos);
}

TEST_CASE("GPT-3 175B on 1024 A100s: 3D parallelism, TP inside a node and PP across nodes") {
  const ModelSpec m = preset("gpt3-175b");
  const ClusterSpec cl;  // 1024 GPUs, 8 per node, 80 GB (defaults)
  const auto ranked = rank_configurations(m, cl, 1536, Precision::mixed());
  REQUIRE(ranked.size() > 10);
  for (size_t i = 0; i < ranked.size(); ++i) {
    CHECK(ranked[i].estimate.fits);
    CHECK(ranked[i].estimate.memory.total() <= cl.memory_bytes);
    if (i > 0) CHECK(ranked[i - 1].estimate.step_s <= ranked[i].estimate.step_s);
  }
  const Config& best = ranked.front().config;
  CHECK(best.tp <= cl.gpus_per_node);
  CHECK(!ranked.front().estimate.crosses_nodes.tp);
  CHECK(best.pp > 1);
  CHECK(ranked.front().estimate.crosses_nodes.pp);
  // TP over the network instead: same bytes, 12x slower links, so every mesh with TP = 16 or
  // more ranks below the best.
  const auto wide = std::find_if(ranked.begin(), ranked.end(),
                                 [](const Candidate& x) { return x.config.tp > 8; });
  REQUIRE(wide != ranked.end());
  CHECK(wide->estimate.crosses_nodes.tp);
  CHECK(wide->estimate.tp_s > 5 * ranked.front().estimate.tp_s);
}

TEST_CASE(
    "GPT-3 175B, pure ZeRO-3 (TP = PP = 1): activations do not fit unless fully "
    "recomputed, and then it is slower") {
  const ModelSpec m = preset("gpt3-175b");
  const ClusterSpec cl;
  const Precision p = Precision::mixed();
  Search zero3;
  zero3.tp = zero3.pp = 1;
  zero3.zero_stages = {3};
  // DP = 1024 ranks cannot split the paper's batch of 1536 sequences.
  zero3.dp = 1024;
  CHECK(error_of([&] { rank_configurations(m, cl, 1536, p, zero3); }) ==
        "DP=1024 does not divide the global batch of 1536 sequences");
  // At 2048 (2 per GPU): one sequence's activations of 96 unsharded layers need
  // 96 x s b h (34 + 5 a s / h) = 276 GB without recomputation and 96 x 34 s b h = 82 GB with
  // selective recomputation: more than 80 GB before any model state.
  for (Recompute r : {Recompute::none, Recompute::selective}) {
    Config c{1, 1, 1024, 3, 1, 2};
    c.recompute = r;
    const Estimate e = estimate(m, cl, c, p);
    CHECK(!e.fits);
    CHECK(e.memory.activations > cl.memory_bytes);
  }
  const auto z = rank_configurations(m, cl, 2048, p, zero3);
  REQUIRE(!z.empty());
  for (const Candidate& x : z) CHECK(x.config.recompute == Recompute::full);
  // It fits, but gathers the whole model twice and reduce-scatters it once per microbatch over
  // the 25 GB/s inter-node links: more time than its compute, on top of a third more FLOPs.
  const Estimate& e = z.front().estimate;
  CHECK(e.crosses_nodes.dp);
  CHECK(e.dp_s > e.compute_s);
  const auto three_d = rank_configurations(m, cl, 2048, p);
  REQUIRE(!three_d.empty());
  CHECK(e.step_s > 2 * three_d.front().estimate.step_s);
  CHECK(e.overlapped_step_s() > three_d.front().estimate.step_s);
}

TEST_CASE("context parallelism by hand: activations, ring bytes, DP x CP, links, bad sizes") {
  const Precision p = Precision::mixed();
  Config c;
  c.microbatch_size = 2;
  c.cp = 2;  // each rank holds s/2 = 2 tokens: (s/2) b h (34 + 5 a s / h) = 32 * 39
  CHECK(layer_activation_bytes(tiny, c, p) == 2496 / 2);
  c.tp = 2;
  c.sequence_parallel = true;  // 32 (34/2 + 2.5)
  CHECK(layer_activation_bytes(tiny, c, p) == 1248 / 2);
  // ring: L/p = 4 layers x m = 1 x 3 blocks (one forward, two backward) x (cp-1) = 1 x
  // 2 b (s/cp) h / t = 2 * 32 / 2 values of 2 bytes
  CHECK(cp_bytes(tiny, c, p) == 4 * 3 * 1 * 64);
  c.recompute = Recompute::full;  // the ring again in the recomputed forward
  CHECK(cp_bytes(tiny, c, p) == 4 * 4 * 1 * 64);
  c.recompute = Recompute::none;
  CHECK(tp_bytes(tiny, c, p) == 4 * 4 * 64);  // b (s/cp) h = 32 values = 64 bytes per call
  // DP: CP ranks hold the same parameters and reduce with DP's: a ring over DP x CP = 4
  c.dp = 2;
  CHECK(dp_bytes(1000, c, p) == 2 * 1000 * 2 * 0.75);
  c.zero = 1;  // optimizer states partitioned over the 4
  CHECK(memory_bytes(tiny, c, p).optimizer == 12.0 * double(shard_parameters(tiny, 2, 1)) / 4);

  // links under rank = tp + TP*(cp + CP*(dp + DP*pp)) on nodes of 8
  ClusterSpec cl;
  cl.gpus = 16;
  cl.gpus_per_node = 8;
  auto mesh = [](int tp, int cp, int pp, int dp) {
    Config m{tp, pp, dp};
    m.cp = cp;
    return m;
  };
  CHECK(!crosses_nodes(cl, mesh(4, 2, 2, 1)).cp);  // TP x CP = 8: a node per stage
  CHECK(crosses_nodes(cl, mesh(4, 2, 2, 1)).pp);
  CHECK(crosses_nodes(cl, mesh(8, 2, 1, 1)).cp);  // TP fills the node: the ring crosses
  CHECK(!crosses_nodes(cl, mesh(8, 2, 1, 1)).tp);
  CHECK(crosses_nodes(cl, mesh(2, 2, 1, 4)).dp);  // the DP x CP group of 8 spans 16 ranks
  CHECK(!crosses_nodes(cl, mesh(2, 2, 1, 4)).cp);

  // bad sizes: the zigzag split needs 2 cp chunks; the product counts CP
  ModelSpec m = tiny;  // s = 4
  cl.gpus = 4;
  CHECK(invalid_reason(m, cl, mesh(1, 4, 1, 1)) ==
        "CP=4 does not split the sequence of 4 tokens into 8 chunks (zigzag: 2 per rank)");
  CHECK(invalid_reason(m, cl, mesh(1, 2, 1, 1)) ==
        "mesh TP=1 x CP=2 x PP=1 x DP=1 = 2 GPUs, not 4");
  CHECK(invalid_reason(m, cl, mesh(1, 2, 1, 2)).empty());
  Search fixed;
  fixed.cp = 4;
  CHECK(error_of([&] { rank_configurations(m, cl, 4, p, fixed); }) ==
        "CP=4 does not split the sequence of 4 tokens of tiny into 8 chunks (zigzag: 2 per rank)");
}

TEST_CASE("long sequences: GPT-3 13B at 32K tokens on 64 A100s, best with CP inside a node") {
  ModelSpec m = preset("gpt3-13b");
  m.seq = 32768;
  ClusterSpec cl;
  cl.gpus = 64;
  const Precision p = Precision::mixed();
  const auto ranked = rank_configurations(m, cl, 64, p);
  REQUIRE(!ranked.empty());
  const Candidate& best = ranked.front();
  CHECK(best.config.cp > 1);
  CHECK(best.config.tp * best.config.cp <= cl.gpus_per_node);  // both inside a node
  CHECK(!best.estimate.crosses_nodes.cp);
  // the same mesh without the ring: twice the tokens per rank, and it no longer fits
  Config no_cp = best.config;
  no_cp.cp = 1;
  no_cp.dp *= best.config.cp;
  no_cp.microbatches /= best.config.cp;
  const Estimate e = estimate(m, cl, no_cp, p);
  CHECK(e.memory.activations ==
        doctest::Approx(best.config.cp * best.estimate.memory.activations).epsilon(0.05));
  CHECK(!e.fits);
  // no configuration without CP is predicted faster
  Search without;
  without.cp = 1;
  const auto flat = rank_configurations(m, cl, 64, p, without);
  if (!flat.empty()) CHECK(flat.front().estimate.step_s > best.estimate.step_s);
}
