// bench/tp: tensor parallelism at TP=2 — each Megatron layer's local GEMMs next to a plain Eigen
// GEMM of the same local shape, and TP=2 training next to the single process, in one run.
//
//   mpiexec -n 2 ./bench_tp [--seconds 1] [--train-seconds 20]       (one thread per rank)
//
// Layer rows: ColumnParallelLinear / RowParallelLinear (tp/linear.hpp) with TP=2's local
// shapes, on both ranks at once (they share the memory system as in training): "local" runs the
// layer on a 1-rank group (its local GEMMs, bias and bookkeeping, no communication), "TP=2" the
// same layer on the 2-rank group (plus its all-reduce: f backward, g forward), "eigen" plain
// Eigen GEMMs of the same local shapes. Times are the slowest rank's.
// Training rows: the bench model (bench_util.hpp), the single process on world rank 0 alone.
#include <trident/io/cli.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/trident.hpp>

#include "bench_util.hpp"

using namespace trident;
using namespace bench;

namespace {

// The two groups a layer runs on: this rank alone, and TP=2.
struct Groups {
  const Comm& world;
  double seconds;
  TensorParallel<> alone, tp2;
};

// One row: a TP layer call (on the given group, every rank) next to the plain GEMMs of its
// local shapes.
void compare(const Groups& g, const std::string& name,
             std::function<void(const TensorParallel<>&)> ours, std::vector<Gemm> gemms) {
  PlainGemms plain(std::move(gemms));
  auto on_all = [&](std::function<void()> f) {
    return [&g, f] {
      g.world.barrier();
      return slowest(g.world, timed(f)());
    };
  };
  const Timings t = interleaved(
      g.world, g.seconds,
      {on_all([&] { ours(g.alone); }), on_all([&] { ours(g.tp2); }), on_all([&] { plain.run(); })});
  const double f = plain.flops() / 1e9, local = t.median(0), eigen = t.median(2);
  if (g.world.rank() == 0)
    std::printf("%-18s %9.3f %9.2f %9.3f %9.2f %9.2f %9.3f %9.2f\n", name.c_str(), local * 1e3,
                f / local, eigen * 1e3, f / eigen, t.ratio(2, 0), t.median(1) * 1e3, t.ratio(1, 0));
  std::fflush(stdout);
}

// A column-parallel (in -> out local features) or row-parallel (in local -> out features)
// layer and its rows.
template <class Layer>
void linear_rows(const Groups& g, const char* name, int N, int in, int out) {
  constexpr bool column = std::is_same_v<Layer, ColumnParallelLinear<float>>;
  const Layer layer{in, out};
  LinearData d(N, in, out);
  std::vector<float> y(d.y.size());
  auto &x = d.x, &w = d.w, &b = d.b, &dy = d.y, &dx = d.dx, &dw = d.dw, &db = d.db;
  compare(
      g, std::string(name) + " fwd",
      [&](const TensorParallel<>& tp) {
        if constexpr (column)
          layer.forward(tp, y.data(), x.data(), dx.data(), w.data(), b.data(), N);  // SP's x_full
        else
          layer.forward(tp, y.data(), y.data(), x.data(), w.data(), b.data(), N);
      },
      linear_forward_gemms(name, N, in, out));
  compare(
      g, std::string(name) + " bwd",
      [&](const TensorParallel<>& tp) {
        if constexpr (column)
          layer.backward(tp, dx.data(), dx.data(), dw.data(), db.data(), dy.data(), x.data(),
                         w.data(), N);
        else
          layer.backward(tp, dx.data(), dw.data(), db.data(), dy.data(), y.data(), x.data(),
                         w.data(), N);  // y: SP's dy_full
      },
      linear_backward_gemms(name, N, in, out));
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    double seconds = 1, train_seconds = 20;
    cli::App app{"TP=2 layers next to plain Eigen GEMMs, and TP=2 training next to one process."};
    app.add_option("--seconds", seconds, "time per layer row")->capture_default_str();
    app.add_option("--train-seconds", train_seconds, "time for the training rows")
        ->capture_default_str();
    parse_command_line(app, argc, argv, world);
    require(world.size() == 2, "bench_tp runs on 2 ranks: mpiexec -n 2 ./bench_tp");
    configure_threads(world, 1);

    const Comm self = world.split(world.rank(), 0, "self"), tp_comm = world.dup("tp");
    const Groups g{world, seconds, {&self, false}, {&tp_comm, false}};
    const gpt2::Options o = bench_options();
    const gpt2::Config& c = o.model;
    const int N = o.batch * c.seq, C = c.hidden, t = world.size();
    if (world.rank() == 0) {
      std::printf(
          "# bench_tp: TP=%d, 1 thread per rank; bench model V=%d T=%d L=%d C=%d H=%d, "
          "batch %d (N=%d rows), float, %s\n",
          t, c.vocab, c.seq, c.layers, C, c.heads, o.batch, N, load_average().c_str());
      std::printf(
          "# local: the layer on a 1-rank group; TP=2: with its all-reduce; ratios: "
          "medians of per-repetition ratios\n");
      std::printf("%-18s %9s %9s %9s %9s %9s %9s %9s\n", "layer, TP=2 shapes", "local_ms",
                  "GFLOP/s", "eigen_ms", "GFLOP/s", "eigen/loc", "TP=2_ms", "TP=2/loc");
    }
    linear_rows<ColumnParallelLinear<float>>(g, "QKV (column)", N, C, 3 * C / t);
    linear_rows<RowParallelLinear<float>>(g, "proj (row)", N, C / t, C);
    linear_rows<ColumnParallelLinear<float>>(g, "FC (column)", N, C, 4 * C / t);
    linear_rows<RowParallelLinear<float>>(g, "MLP proj (row)", N, 4 * C / t, C);
    const double check = machine_check(world, seconds);
    if (world.rank() == 0)
      std::printf(
          "# machine check: a GEMM on both ranks at once takes %.2f x its time on one "
          "rank alone (1.00: a core per rank)\n",
          check);

    gpt2::Options tp2 = bench_options({2, 1, 1}), sp = tp2;
    sp.sequence_parallel = true;
    BenchTrainer tp_trainer(world, tp2, TokenSource::synthetic(c.vocab));
    BenchTrainer sp_trainer(world, sp, TokenSource::synthetic(c.vocab));
    if (world.rank() == 0) std::printf("\n");
    training_table(world, train_seconds, o,
                   {{"TP=2", &tp_trainer}, {"TP=2, sequence parallel", &sp_trainer}});
    return 0;
  });
}
