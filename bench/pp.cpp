// bench/pp: the pipeline bubble measured from a training step's spans next to GPipe's
// (p-1)/(m+p-1), and pipelined training next to the single process, in one run.
//
//   mpiexec -n 2 ./bench_pp        mpiexec -n 4 ./bench_pp       [--steps 5] [--train-seconds 20]
//                                                                 [--zero-bubble-only]
//
// Bubble (Huang et al. 2019; the same for 1F1B, Narayanan et al. 2021 §2.2), the median over
// --steps steps, m = 1 ... 16 microbatches of a global batch of 16 sequences:
//  - spans: as train/report.hpp, from the step's spans (StepResult::intervals),
//      1 - sum over ranks of forward + backward wall time / (p x makespan);
//  - work: 1 - W / (c x makespan), W the forward + backward time of the same step (m
//    microbatches) in one process alone, c = min(p, cores). Its formula is
//      1 - min(1, p m / (c (m + p - 1))),
//    which is (p-1)/(m+p-1) when every rank has a core. With more ranks than cores the spans
//    of ranks that share a core stretch, so only this measure says how busy the cores were.
// Models: the bench model with a byte vocabulary (V=256: a cheap LM head, balanced stages, as
// the formula assumes), and the bench model itself (V=4096: the last stage also runs an LM head
// worth ~1.2 blocks). "check": the same GEMM on all ranks at once over its time on rank 0
// alone, right after the row (1.00: a core per rank; p / cores when ranks share the cores).
// The bubble table splits the layers evenly, as the formula assumes equal stages.
//
// ZB-H1 and ZB-V next to 1F1B: pp_zero_bubble.hpp.
//
// Training rows: the bench model, global batch 8, m = 8: layers even, auto (each rank's cost
// balanced, pp/balance.hpp) with 1F1B, ZB-H1 and ZB-V, each next to the single process in the
// same run (goal: 1.65x at PP=2).
#include <numeric>

#include <trident/io/cli.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/plan/formulas.hpp>
#include <trident/trident.hpp>

#include "bench_util.hpp"
#include "pp_zero_bubble.hpp"

using namespace trident;
using namespace bench;

namespace {

// Median bubbles of `steps` steps (after a warm-up step) of a pipeline over the world.
Bubble measure_bubble(const Comm& world, const gpt2::Options& o, int steps, int cores) {
  gpt2::Options alone = o;
  alone.mesh = {1, 1, 1};
  alone.pp_layers.clear();
  SingleProcess single(world, alone);
  BenchTrainer t(world, o, TokenSource::synthetic(o.model.vocab));
  (void)t.step();
  single.step(world);
  std::vector<double> spans, work;
  for (int s = 0; s < steps; ++s) {
    const StepResult r = t.step();
    double end = 0;
    for (const pp::Interval& sp : r.intervals) end = std::max(end, sp.end);
    const double compute = world.all_reduce_value(compute_seconds(r.intervals));
    const double makespan = slowest(world, end);
    const double w =
        single.run(world, [](BenchTrainer& st) { return compute_seconds(st.step().intervals); });
    spans.push_back(1 - compute / (world.size() * makespan));
    work.push_back(1 - w / (std::min(world.size(), cores) * makespan));
  }
  return {median(spans), median(work)};
}

// The bubble table: GPipe's formula next to the measured spans and work bubbles, m = 1 ... 16,
// layers split evenly (V = 256 and V = 4096).
void bubble_table(const Comm& world, const std::string& schedule, int steps, int cores) {
  const int p = world.size(), c = std::min(p, cores);
  if (world.rank() == 0) {
    std::printf(
        "# bench_pp: PP=%d (%s), 1 thread per rank, %d cores; bench model L=4 C=256 H=8 "
        "T=128, global batch 16; median of %d steps; %s\n",
        p, schedule.c_str(), cores, steps, load_average().c_str());
    std::printf("%4s %9s | %-39s | %-19s\n", "", "", "V=256 (balanced stages)", "V=4096");
    std::printf("%4s %9s | %9s %9s %9s %9s | %9s %9s | %6s\n", "m", "formula", "spans", "-formula",
                "work", "(formula)", "spans", "-formula", "check");
  }
  for (int m : steps > 0 ? std::vector<int>{1, 2, 4, 8, 16} : std::vector<int>{}) {
    const double formula = pp::bubble_share(p, m);
    const double work_formula = 1 - std::min(1.0, double(p) * m / (c * (m + p - 1.0)));
    Bubble b[2];
    for (int k = 0; k < 2; ++k) {
      gpt2::Options o = bench_options({1, p, 1}, m);
      o.batch = 16;
      o.schedule = pp::parse_schedule(schedule);
      o.pp_layers.assign(p, o.model.layers / p);  // equal layers, as the formula assumes
      if (k == 0) o.model.vocab = 256;
      b[k] = measure_bubble(world, o, k == 0 ? steps : std::max(1, steps / 2), cores);
    }
    const double check = machine_check(world, 0.5);
    if (world.rank() == 0)
      std::printf("%4d %9.3f | %9.3f %+9.3f %9.3f %9.3f | %9.3f %+9.3f | %6.2f\n", m, formula,
                  b[0].spans, b[0].spans - formula, b[0].work, work_formula, b[1].spans,
                  b[1].spans - formula, check);
    std::fflush(stdout);
  }
}

// The costliest pipeline rank's share of the model's cost (pp/balance.hpp's costs) under o's
// split and placement: 1 / (that share) bounds the speedup of any schedule.
double costliest_share(const gpt2::Options& o) {
  const pp::StageCosts c = gpt2::Model(o.model).stage_costs();
  const std::vector<double> rank = pp::rank_costs(c, layer_split(o), o.chunk_map());
  return *std::max_element(rank.begin(), rank.end()) /
         std::accumulate(rank.begin(), rank.end(), 0.0);
}

// Throughput on the bench model (global batch 8), m = 8, next to the single process; for p = 2
// also layers auto with 1F1B and ZB-H1, and V = 256.
void training_rows(const Comm& world, const std::string& schedule, double train_seconds) {
  const int p = world.size();
  gpt2::Options even = bench_options({1, p, 1}, 8);
  even.schedule = pp::parse_schedule(schedule);
  even.pp_layers.assign(p, even.model.layers / p);  // 2+2 or 1+1+1+1
  BenchTrainer t_even(world, even, TokenSource::synthetic(even.model.vocab));
  if (world.rank() == 0) std::printf("\n");
  if (p != 2) {
    training_table(world, train_seconds, bench_options(), {{"PP=4, m=8, layers 1+1+1+1", &t_even}});
    return;
  }
  gpt2::Options balanced = even;  // auto: the LM head weighs ~1.2 blocks, 3 + 1
  balanced.pp_layers.clear();
  balanced.schedule = pp::ScheduleKind::one_f_one_b;
  gpt2::Options zb = balanced, zbv = balanced;
  zb.schedule = pp::ScheduleKind::zb_h1;
  zbv.schedule = pp::ScheduleKind::zbv;
  zbv.virtual_stages = 2;         // auto: 1.5,1,1.5,0
  gpt2::Options zbv_whole = zbv;  // the best split with whole layers (pp/balance.hpp)
  zbv_whole.pp_layers = {1, 1, 2, 0};
  BenchTrainer t_balanced(world, balanced, TokenSource::synthetic(even.model.vocab));
  BenchTrainer t_zb(world, zb, TokenSource::synthetic(even.model.vocab));
  BenchTrainer t_zbv(world, zbv, TokenSource::synthetic(even.model.vocab));
  BenchTrainer t_zbv_whole(world, zbv_whole, TokenSource::synthetic(even.model.vocab));
  auto named = [](const char* schedule, const gpt2::Options& o) {
    return std::string("PP=2, m=8, ") + schedule + " " + pp::half_split_text(layer_split(o), ",");
  };
  const std::vector<double> speedup = training_table(world, train_seconds, bench_options(),
                                                     {{"PP=2, m=8, 1f1b 2,2", &t_even},
                                                      {named("1f1b", balanced), &t_balanced},
                                                      {named("zb-h1", zb), &t_zb},
                                                      {named("zbv", zbv), &t_zbv},
                                                      {named("zbv", zbv_whole), &t_zbv_whole}});
  if (world.rank() == 0)
    std::printf(
        "# goal (issue 17): PP=2 m=8 over the single process, >= 1.65: 1f1b auto %.2f, zb-h1 auto "
        "%.2f, zbv auto %.2f\n",
        speedup[1], speedup[2], speedup[3]);
  // What cutting the batch into 8 microbatches costs by itself: one process, m = 8 against m = 1
  // (8 times the weight reads and weight-gradient updates, GEMMs of 1/8 the rows).
  gpt2::Options eighths = bench_options({1, 1, 1}, 8);
  SingleProcess whole(world, bench_options()), cut(world, eighths);
  const Timings g =
      interleaved(world, train_seconds / 4,
                  {[&] { return whole.step(world); }, [&] { return cut.step(world); }});
  if (world.rank() == 0)
    std::printf(
        "# one process with m=8 takes %.3f x its step with m=1 (%s): with the costliest rank's "
        "share of the cost model's work (1f1b auto %.3f, zbv auto %.3f), PP=2 m=8 can reach at "
        "most %.2fx, %.2fx\n",
        g.ratio(1, 0), load_average().c_str(), costliest_share(balanced), costliest_share(zbv),
        1 / (costliest_share(balanced) * g.ratio(1, 0)),
        1 / (costliest_share(zbv) * g.ratio(1, 0)));
  // The byte vocabulary: the LM head is cheap, so 2 + 2 layers are equal stages.
  gpt2::Options bytes = even, single = bench_options();
  bytes.model.vocab = single.model.vocab = 256;
  BenchTrainer t_bytes(world, bytes, TokenSource::synthetic(bytes.model.vocab));
  if (world.rank() == 0) std::printf("\n# the same with V=256 (equal stages)\n");
  training_table(world, train_seconds, single, {{"PP=2, m=8, V=256, 2+2", &t_bytes}});
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    int steps = 5;
    double train_seconds = 20;
    std::string schedule = "1f1b";
    bool zero_bubble_only = false;
    cli::App app{
        "Pipeline bubble next to (p-1)/(m+p-1), and pipelined training next to one process."};
    app.add_option("--steps", steps, "measured steps per configuration (0: no bubble tables)")
        ->capture_default_str();
    app.add_option("--schedule", schedule, "pipeline schedule of the bubble table")
        ->check(cli::IsMember({"gpipe", "1f1b"}))
        ->capture_default_str();
    app.add_option("--train-seconds", train_seconds, "time for the training rows (0: none)")
        ->capture_default_str();
    app.add_flag("--zero-bubble-only", zero_bubble_only,
                 "skip the bubble table: ZB-H1 and ZB-V next to 1F1B, then the training rows");
    parse_command_line(app, argc, argv, world);
    const int p = world.size(),
              cores = node_comm(world).all_reduce_value(cores_available(), ReduceOp::max);
    require(p == 2 || p == 4, "bench_pp runs on 2 or 4 ranks (PP = ranks)");
    configure_threads(world, 1);
    if (!zero_bubble_only) bubble_table(world, schedule, steps, cores);
    zero_bubble_table(world, steps);
    if (train_seconds > 0) training_rows(world, schedule, train_seconds);
    return 0;
  });
}
