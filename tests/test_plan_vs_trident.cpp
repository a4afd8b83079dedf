// The cost model of trident's own runs (costmodel/trident_memory.hpp, costmodel/predict.hpp)
// against trident itself: each rank's model-state bytes (MemoryStats, by kind) to the byte for many
// meshes, ZeRO stages and precisions; the activation and buffer peaks and the bytes per axis
// (CommStats) of one step; the arithmetic of calibrate.hpp's fits and of the cluster machine; and
// the layout chooser (costmodel/layout.hpp) on 4 ranks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <trident/costmodel/layout.hpp>
#include <trident/costmodel/predict.hpp>
#include <trident/models/gpt2/gpt2.hpp>
#include <trident/train/report_formulas.hpp>

#include "mpi_test.hpp"

using namespace trident;
using namespace trident::costmodel;

namespace {

// A small model whose units are not multiples of DP (padding: a layer has C (12 C + 13)
// elements, 2 x odd for C = 18) and whose vocabulary is not a multiple of TP (vocab padding);
// TP = 4 and 8 need as many heads and hidden sizes they divide; CP = 4 a sequence of 8 chunks.
gpt2::Options options(MeshShape mesh, int zero, int microbatches = 1) {
  gpt2::Options o;
  const int heads = std::max(2, mesh.tp);
  o.model = {250, mesh.cp == 4 ? 16 : 12, 4, mesh.tp == 8 ? 24 : mesh.tp == 4 ? 20 : 18, heads, 3};
  o.mesh = mesh;
  o.zero.stage = zero;
  o.microbatches = microbatches;
  o.batch = 2 * mesh.dp * microbatches;
  return o;
}

std::string describe(const gpt2::Options& o) {
  return "TP" + std::to_string(o.mesh.tp) + "-PP" + std::to_string(o.mesh.pp) + "-DP" +
         std::to_string(o.mesh.dp) + "-CP" + std::to_string(o.mesh.cp) + " " +
         to_string(o.cp_split) + (o.sequence_parallel ? " SP" : "") + " ZeRO-" +
         std::to_string(o.zero.stage) + " m=" + std::to_string(o.microbatches) +
         " v=" + std::to_string(o.virtual_stages) + " " + pp::to_string(o.schedule) +
         (o.recompute != Recompute::none ? std::string(" recompute ") + to_string(o.recompute)
                                         : std::string()) +
         (o.zero.reduce == GradReduce::per_step ? " per-step" : "") +
         (o.zero.keep_gathered ? " keep-gathered" : "") + " layers " +
         pp::half_split_text(layer_split(o));
}

// Builds the trainer and compares this rank's model states with the prediction for its stage.
template <class T, class S>
void check_model_states(const gpt2::Options& o) {
  auto comm = test::first_ranks(o.mesh.product(), test::current_test_name());
  if (!comm) return;
  const MemoryStats& mem = memory_stats();
  const double p0 = mem.current(MemoryKind::parameters), g0 = mem.current(MemoryKind::gradients),
               k0 = mem.current(MemoryKind::optimizer);
  gpt2::Trainer<T, S> t(*comm, o, TokenSource::synthetic(o.model.vocab));
  const ModelStateBytes predicted =
      stage_model_states(o, t.mesh().stage(), trident_precision<T, S>());
  INFO(describe(o) << (std::is_same_v<T, S> ? " float" : " bf16") << ", rank " << comm->rank());
  CHECK(mem.current(MemoryKind::parameters) - p0 == predicted.params);
  CHECK(mem.current(MemoryKind::gradients) - g0 == predicted.grads);
  CHECK(mem.current(MemoryKind::optimizer) - k0 == predicted.optimizer);
}

// One step: the activation and buffer peaks and the bytes of each axis, against the prediction.
// Buffers (trident_buffers.hpp) to the byte, but for the copies of gradients that stages 2 and
// 3 reduce per microbatch: there the prediction is a bound (every reduction in flight until
// its unit's next is launched), which a reduction finished early by a poll undercuts, by at
// most the stage's gradient copies (Psi elements of S).
void check_step(const gpt2::Options& o) {
  auto comm = test::first_ranks(o.mesh.product(), test::current_test_name());
  if (!comm) return;
  gpt2::Trainer<float, float> t(*comm, o, TokenSource::synthetic(o.model.vocab));
  const Precision p = trident_precision<float, float>();
  Calibration unit;  // any machine: only bytes are compared
  unit.gemm_flops = 1;
  for (const auto& call : after_calls(o)) unit.calls[call] = LinearFit{1, 1};
  for (const auto& call : loop_calls(o)) unit.loop_calls[call] = LinearFit{1, 1};
  const StagePrediction st = predict(o, p, measured_machine(unit)).stages[t.mesh().stage()];
  comm_stats().reset();
  memory_stats().reset_peaks();
  (void)t.step();
  INFO(describe(o) << ", rank " << comm->rank());
  CHECK(double(memory_stats().peak(MemoryKind::activations)) == st.activations);
  const double buffers = double(memory_stats().peak(MemoryKind::buffers));
  const double bound = stage_buffer_bytes(o, t.mesh().stage(), p);
  if (o.zero.full_gradients()) {
    CHECK(buffers == bound);
  } else {
    CHECK(buffers <= bound);
    CHECK(buffers + stage_parameters(o, t.mesh().stage()) * p.param_bytes >= bound);
  }
  CHECK(double(comm_stats().of("tp").total().bytes) == st.bytes.tp);
  CHECK(double(comm_stats().of("pp")[CommOp::send].bytes) == st.bytes.pp);
  CHECK(double(comm_stats().of("cp")[CommOp::send].bytes) == st.bytes.cp);
  CHECK((o.mesh.cp > 1) == (st.bytes.cp > 0));
  CHECK(double(comm_stats().of("dp").total().bytes + comm_stats().of("dp_cp").total().bytes) ==
        st.bytes.dp);
  CHECK(double(comm_stats().of("emb").total().bytes) == st.bytes.emb);
}

const MeshShape meshes8[] = {{1, 1, 8}, {2, 2, 2}, {2, 1, 4}, {1, 2, 4},
                             {4, 1, 2}, {1, 4, 2}, {8, 1, 1}};
const MeshShape meshes4[] = {{1, 1, 4}, {2, 1, 2}, {1, 2, 2}, {2, 2, 1}, {4, 1, 1}};

}  // namespace

TEST_CASE("model states: the cost model's bytes are MemoryStats' bytes on every rank") {
  // every mesh at every ZeRO stage, float or bf16 storage in turn (each stage sees both)
  auto check = [](const MeshShape& mesh, int zero, bool bf16_storage) {
    const gpt2::Options o = options(mesh, zero, mesh.pp > 1 ? 2 * mesh.pp : 1);
    if (bf16_storage)
      check_model_states<float, bf16>(o);
    else
      check_model_states<float, float>(o);
  };
  int k = 0;  // meshes so far
  for (const MeshShape& mesh : meshes4)
    for (int zero = 0; zero <= 3; ++zero) {
      check(mesh, zero, (zero + k) % 2);
      k += zero == 3;
    }
  for (const MeshShape& mesh : meshes8)
    for (int zero = 0; zero <= 3; ++zero) {
      check(mesh, zero, (zero + k) % 2);
      k += zero == 3;
    }
  // the interleaved schedule: two chunks per rank, the head's copy of wte on the last stage
  gpt2::Options o = options({1, 2, 4}, 1, 4);
  o.schedule = pp::ScheduleKind::interleaved;
  o.virtual_stages = 2;
  check_model_states<float, float>(o);
  check_model_states<double, double>(o);
  // CP: ZeRO partitions over DP x CP, so units are padded to a multiple of it
  for (const MeshShape& mesh : {MeshShape{1, 1, 2, 2}, MeshShape{2, 1, 1, 2}, MeshShape{1, 2, 1, 2},
                                MeshShape{2, 1, 2, 2}, MeshShape{1, 1, 1, 4}})
    for (int zero = 0; zero <= 3; ++zero) check(mesh, zero, zero % 2);
}

TEST_CASE("one step: activation peak and bytes per axis as predicted") {
  check_step(options({1, 1, 4}, 3));
  check_step(options({2, 2, 1}, 0, 4));
  gpt2::Options gpipe = options({1, 2, 2}, 2, 3);
  gpipe.schedule = pp::ScheduleKind::gpipe;
  check_step(gpipe);
  check_step(options({1, 1, 8}, 3));
  check_step(options({2, 2, 2}, 1, 4));
  check_step(options({4, 1, 2}, 1));
  gpt2::Options rec = options({2, 2, 2}, 2, 4);
  rec.recompute = Recompute::full;
  check_step(rec);
  gpt2::Options per_step = options({1, 2, 4}, 3, 4);
  per_step.zero.reduce = GradReduce::per_step;
  check_step(per_step);
  gpt2::Options kept = options({1, 2, 4}, 3, 2);
  kept.zero.keep_gathered = true;
  check_step(kept);
  gpt2::Options inter = options({1, 2, 4}, 1, 4);
  inter.schedule = pp::ScheduleKind::interleaved;
  inter.virtual_stages = 2;
  check_step(inter);
  // stage boundaries inside layers (nn/block_halves.hpp): at PP=4 between neighbours (the split
  // layers' gradients sent over PP), and a stage of one attention half under recomputation
  gpt2::Options halves = options({1, 4, 1}, 0, 4);
  halves.pp_layers = {1.5, 1, 1, 0.5};
  check_step(halves);
  gpt2::Options half_rec = options({1, 2, 2}, 1, 2);
  half_rec.recompute = Recompute::full;
  half_rec.pp_layers = {0.5, 3.5};
  check_step(half_rec);
  // zero-bubble schedules: B keeps the linear layers' inputs and their outputs' gradients for W
  gpt2::Options zb = options({1, 2, 2}, 2, 4);
  zb.schedule = pp::ScheduleKind::zb_h1;
  check_step(zb);
  gpt2::Options zb_sp = options({2, 2, 1}, 0, 4);
  zb_sp.schedule = pp::ScheduleKind::zb_h1;
  zb_sp.sequence_parallel = true;
  check_step(zb_sp);
  gpt2::Options zbv = options({1, 2, 2}, 1, 4);
  zbv.schedule = pp::ScheduleKind::zbv;
  zbv.virtual_stages = 2;
  check_step(zbv);
}

// Selective recomputation: each layer's stash without its probabilities (held during its
// forward), and its attention half's backward recomputing them (and attention's output) as
// buffers — under 1F1B with TP and SP, ZB-H1 with DP and ZeRO-2, and a stage of one attention half.
TEST_CASE("one step under selective recomputation: activation and buffer peaks as predicted") {
  gpt2::Options sp = options({2, 2, 1}, 0, 4);
  sp.sequence_parallel = true;
  sp.recompute = Recompute::selective;
  check_step(sp);
  gpt2::Options zb = options({1, 2, 2}, 2, 4);
  zb.schedule = pp::ScheduleKind::zb_h1;
  zb.recompute = Recompute::selective;
  check_step(zb);
  gpt2::Options halves = options({1, 2, 2}, 1, 2);
  halves.recompute = Recompute::selective;
  halves.pp_layers = {0.5, 3.5};
  check_step(halves);
}

TEST_CASE("one step under CP: the ring's bytes, DP x CP's, the activation peak as predicted") {
  check_step(options({1, 1, 1, 2}, 0));
  check_step(options({1, 1, 1, 4}, 1));
  gpt2::Options contiguous = options({1, 1, 1, 4}, 0);
  contiguous.cp_split = CpSplit::contiguous;
  check_step(contiguous);
  // TP2-CP2 with SP (ZeRO-0: each rank reduces the TP-replicated gradients in full, where a
  // ZeRO shard holds a rank's own share of them and the model counts an average one)
  gpt2::Options sp = options({2, 1, 1, 2}, 0, 2);
  sp.sequence_parallel = true;
  check_step(sp);
  check_step(options({2, 1, 2, 2}, 3));  // TP2-CP2-DP2, ZeRO-3 over DP x CP
  gpt2::Options pp = options({1, 2, 1, 2}, 1, 4);
  pp.recompute = Recompute::full;  // the ring again in each layer's recomputation
  check_step(pp);
  gpt2::Options zb = options({1, 2, 2, 2}, 2, 4);
  zb.schedule = pp::ScheduleKind::zb_h1;
  check_step(zb);
}

TEST_CASE("fits and machines: least squares, one latency per batch, ring bytes over links") {
  const LinearFit f =
      fit_line({1e3, 1e6, 4e6}, {2e-3 + 1e3 / 5e8, 2e-3 + 1e6 / 5e8, 2e-3 + 4e6 / 5e8});
  CHECK(f.latency == doctest::Approx(2e-3));
  CHECK(f.bandwidth == doctest::Approx(5e8));
  Calibration c;
  c.calls[{CommOp::all_gather, 4}] = LinearFit{1e-3, 1e9};
  const Machine here = measured_machine(c);
  CHECK(here.seconds(CommOp::all_gather, 4, std::vector<double>{1e6, 2e6}, false) ==
        doctest::Approx(1e-3 + 3e-3));
  CHECK(here.seconds(CommOp::all_gather, 1, 1e6, false) == 0);  // a group of one moves nothing

  // GPT-3 175B on DGX A100s (rank = tp + TP (dp + DP pp), 8 GPUs per node): TP8 stays inside
  // a node, PP and DP cross; TP16 crosses; an all-reduce over the ring sends 2 (n-1)/n.
  gpt2::Options o;
  const ModelSpec m = preset("gpt3-175b");
  o.model = {m.vocab, m.seq, m.layers, m.hidden, m.heads};
  o.mesh = {8, 16, 8};
  o.zero.stage = 1;
  o.batch = 64;
  o.microbatches = 8;
  o.recompute = Recompute::full;
  const ClusterSpec a100;
  const Prediction p = predict(o, Precision::mixed(), cluster_machine(a100, "A100"));
  CHECK_FALSE(p.crosses.tp);
  CHECK(p.crosses.pp);
  CHECK(p.crosses.dp);
  CHECK(cluster_machine(a100, "").seconds(CommOp::all_reduce, 8, 1e9, false) ==
        doctest::Approx(2.0 * 7 / 8 * 1e9 / a100.intra_node_bw));
  // Psi of a middle stage: 6 layers of Megatron's shard (12 h^2 + 7 h)/8 + 6 h, padded to DP
  const double layer = double(layer_shard_parameters(m, 8));
  CHECK(stage_parameters(o, 5) == 6 * std::ceil(layer / 8) * 8);
  CHECK(p.stages[5].states.total() == doctest::Approx((2 + 2 + 12.0 / 8) * stage_parameters(o, 5)));
  o.mesh = {16, 8, 8};
  CHECK(predict(o, Precision::mixed(), cluster_machine(a100, "A100")).crosses.tp);
}

// One bubble per schedule (pp/schedule_traits.hpp): the run report's formula (its fraction
// with p, m and v put in), the planner's estimate and the cost model's prediction agree, and the
// cost model's pipeline time carries each schedule's own fill and drain (ZB-H1's a third of
// 1F1B's with F = B = W: Qi et al. 2023).
TEST_CASE("the report, the planner and the cost model: the same bubble for every schedule") {
  const ModelSpec m = preset("gpt3-175b");
  gpt2::Options o;
  o.model = {m.vocab, m.seq, m.layers, m.hidden, m.heads};
  o.mesh = {8, 4, 2};
  o.batch = 16;
  o.microbatches = 8;
  ClusterSpec cluster;
  cluster.gpus = 64;
  cluster.memory_bytes = 1e15;  // the bubble, not the fit
  std::map<pp::ScheduleKind, double> pipeline_s;
  for (pp::ScheduleKind kind : pp::kTrainingSchedules) {
    o.schedule = kind;
    o.virtual_stages = pp::traits(kind).min_chunks;
    CAPTURE(pp::to_string(kind));
    const double want = pp::traits(kind).bubble_share(4, 8, o.virtual_stages);
    const Prediction p = predict(o, Precision::mixed(), cluster_machine(cluster, "A100"));
    CHECK(p.bubble_formula == want);
    CHECK(plan::estimate(m, cluster, plan_config(o), Precision::mixed()).bubble_share == want);
    const BubbleForm f = bubble_form(o);
    if (!f.fraction.empty()) {
      const std::size_t slash = f.fraction.find('/');
      CHECK(std::stod(f.fraction.substr(0, slash)) / std::stod(f.fraction.substr(slash + 1)) ==
            doctest::Approx(want).epsilon(1e-12));
    }
    pipeline_s[kind] = p.pipeline_s;
  }
  using K = pp::ScheduleKind;
  CHECK(pipeline_s[K::gpipe] == doctest::Approx(pipeline_s[K::one_f_one_b]));
  CHECK(pipeline_s[K::zb_h1] < pipeline_s[K::one_f_one_b]);
}

namespace {
// Every rank chose the same layout.
void check_same_choice(const Comm& comm, const LayoutChoice& c) {
  const std::string mine = layout_name(c.chosen());
  std::vector<double> code{double(std::hash<std::string>{}(mine) % 1000003)},
      codes(std::size_t(comm.size()));
  comm.all_gather(Span<const double>(code), Span<double>(codes));
  for (double x : codes) CHECK(x == code[0]);
}

// The next run on this machine and build reuses every measurement of choice c's and predicts
// the same, to the bit: the same ranking.
void check_calibration_reused(const Comm& comm, const gpt2::Options& base, const LayoutSearch& s,
                              const LayoutChoice& c) {
  const LayoutChoice again = rank_layouts(comm, base, s, trident_precision<float, float>());
  CHECK(again.calibration_measured == 0);
  CHECK(again.calibration_reused == c.calibration_measured);
  REQUIRE(again.fitting.size() == c.fitting.size());
  for (std::size_t k = 0; k < c.fitting.size(); ++k) {
    CHECK(layout_name(again.fitting[k].options) == layout_name(c.fitting[k].options));
    CHECK(again.fitting[k].predicted_s == c.fitting[k].predicted_s);
  }
}

// A limit under the smallest peak: one Error naming it and its layout.
void check_nothing_fits(const Comm& comm, const gpt2::Options& base, LayoutSearch s, double least) {
  s.memory_limit = least / 2;
  std::string error;
  try {
    (void)choose_layout<float, float>(comm, base, TokenSource::synthetic(base.model.vocab), s);
  } catch (const Error& e) {
    error = e.what();
  }
  CHECK(error.find("no layout fits the memory limit") != std::string::npos);
  CHECK(error.find("smallest predicted peak") != std::string::npos);
}
}  // namespace

TEST_CASE("layout auto: every layout valid, the peak predicted within 5%, the fastest tried") {
  auto comm = test::first_ranks(4, test::current_test_name());
  if (!comm) return;
  gpt2::Options base;
  base.model = {64, 8, 2, 16, 2, 3};
  base.batch = 4;
  const TokenSource data = TokenSource::synthetic(base.model.vocab);
  const std::vector<gpt2::Options> all = layout_candidates(base, comm->size());
  REQUIRE(all.size() > 20);
  bool cp = false, zb = false, pp = false;
  for (const gpt2::Options& o : all) {
    CHECK(o.mesh.product() == comm->size());
    cp = cp || o.mesh.cp > 1;
    pp = pp || o.mesh.pp > 1;
    zb = zb || o.schedule == pp::ScheduleKind::zb_h1;
  }
  CHECK((cp && pp && zb));
  LayoutSearch s;
  s.trials = 3;
  s.trial_steps = 1;
  const Precision p = trident_precision<float, float>();
  // a limit between the smallest and the largest peak drops the layouts above it
  double least = 1e300, most = 0;
  for (const gpt2::Options& o : all) {
    least = std::min(least, predicted_peak(o, p).total);
    most = std::max(most, predicted_peak(o, p).total);
  }
  s.memory_limit = (least + most) / 2;
  // the calibration kept in a file (io/calibration_cache.hpp), the same name on every rank
  s.calibration_cache = "layout_auto_calibration." + std::to_string(comm->size()) + ".tsv";
  if (comm->rank() == 0) std::remove(s.calibration_cache.c_str());
  comm->barrier();
  const LayoutChoice c = choose_layout<float, float>(*comm, base, data, s);
  CHECK(c.calibration_reused == 0);
  CHECK(c.calibration_measured > 0);
  CHECK(c.valid == int(all.size()));
  int refused = 0;
  (void)layout_candidates(base, comm->size(), {}, &refused);
  CHECK(c.refused == refused);
  CHECK(refused > 0);
  CHECK(c.over_memory > 0);
  CHECK(c.over_memory + int(c.fitting.size()) == c.valid);
  REQUIRE(c.tried == 3);
  for (std::size_t k = 0; k < c.fitting.size(); ++k) {
    CHECK(c.fitting[k].peak_bytes <= s.memory_limit);
    if (k > 0) CHECK(c.fitting[k - 1].predicted_s <= c.fitting[k].predicted_s);
  }
  for (int k = 0; k < c.tried; ++k) {
    const LayoutCandidate& x = c.fitting[std::size_t(k)];
    INFO(layout_name(x.options));
    CHECK(x.measured_s > 0);
    CHECK(x.measured_s >= c.fitting[std::size_t(c.winner)].measured_s);
    // states and activations to the byte, buffers as check_step's: the whole within 5%
    if (comm->rank() == 0)
      CHECK(std::abs(x.measured_peak - x.peak_bytes) <= 0.05 * x.measured_peak);
  }
  check_same_choice(*comm, c);
  check_calibration_reused(*comm, base, s, c);
  check_nothing_fits(*comm, base, s, least);
}
