// bench/model: single-process training of the bench model next to its GEMM-bound ideal, and each
// layer's forward/backward next to plain GEMMs of the same shapes, in one run.
//
//   ./bench_model [--seconds 1.5] [--train-seconds 20] [--cpu-time]   (one process, one thread)
//
// The ideal: a training step's GEMM FLOPs (Narayanan et al. 2021, eq. (3) without recomputation,
// bench_util.hpp) at the FLOP/s of the fastest plain engine (Eigen's GEMM or the linked BLAS) on
// exactly the step's products, measured in the same run, interleaved with the training steps.
// Ratio = ideal time / step time.
#include <cmath>
#include <trident/io/cli.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/trident.hpp>

#include "bench_util.hpp"

using namespace trident;
using namespace bench;

namespace {

// One row: our layer (forward or backward) next to the plain GEMMs of the same shapes, by each
// engine; ours/best = the fastest engine's time over ours.
Clock bench_clock = Clock::wall;  // --cpu-time: Clock::cpu

void compare(const Comm& world, double seconds, const std::string& name, std::function<void()> ours,
             std::vector<Gemm> gemms) {
  const auto plain = plain_engines(gemms);
  std::vector<Variant> variants{timed(ours, bench_clock)};
  for (const auto& p : plain) variants.push_back(timed([&p] { p->run(); }, bench_clock));
  const Timings t = interleaved(world, seconds, variants);
  const double f = plain[0]->flops() / 1e9, ours_s = t.median(0);
  std::printf("%-18s %10.3f %10.2f", name.c_str(), ours_s * 1e3, f / ours_s);
  for (std::size_t k = 1; k < variants.size(); ++k) std::printf(" %10.2f", f / t.median(k));
  std::printf(" %8.2f\n", t.ratio_to_fastest(0, 1, variants.size()));
  std::fflush(stdout);
}

void linear_rows(const Comm& world, double seconds, const char* name, int N, int I, int O) {
  LinearData d(N, I, O);
  auto &x = d.x, &w = d.w, &b = d.b, &y = d.y, &dx = d.dx, &dw = d.dw, &db = d.db;
  compare(
      world, seconds, std::string(name) + " fwd",
      [&] { nn::linear_forward(y.data(), x.data(), w.data(), b.data(), N, I, O); },
      linear_forward_gemms(name, N, I, O));
  compare(
      world, seconds, std::string(name) + " bwd",
      [&] {
        nn::linear_backward(dx.data(), dw.data(), db.data(), y.data(), x.data(), w.data(), N, I, O);
      },
      linear_backward_gemms(name, N, I, O));
}

void attention_rows(const Comm& world, double seconds, int B, int seq, int H, int D) {
  const std::size_t N = std::size_t(B) * seq;
  auto qkv = random_vector(N * 3 * H * D, 1), dout = random_vector(N * H * D, 1);
  std::vector<float> out(N * H * D), probs(std::size_t(B) * H * seq * seq), dqkv(qkv.size());
  compare(
      world, seconds, "attention fwd",
      [&] { nn::attention_forward(out.data(), probs.data(), qkv.data(), B, seq, H, D); },
      attention_forward_gemms(B * H, seq, D));
  compare(
      world, seconds, "attention bwd",
      [&] {
        nn::attention_backward(dqkv.data(), dout.data(), qkv.data(), probs.data(), B, seq, H, D);
      },
      attention_backward_gemms(B * H, seq, D));
}

// The LM head tied to wte with its softmax cross-entropy (tp/vocab_parallel.hpp, one rank).
void head_rows(const Comm& world, double seconds, int N, int C, int V) {
  const TensorParallel tp{&world, false};
  const VocabParallelHead<float> head{0, V, V, C};
  auto h = random_vector(std::size_t(N) * C, 1), wte = random_vector(std::size_t(V) * C, 0.02f);
  std::vector<float> probs(std::size_t(N) * V), losses(N), dh(h.size()), dwte(wte.size());
  std::vector<std::int32_t> targets(N);
  for (int i = 0; i < N; ++i) targets[i] = (i * 7919) % V;
  compare(
      world, seconds, "LM head+loss fwd",
      [&] {
        head.forward(tp, losses.data(), probs.data(), h.data(), dh.data(), wte.data(),
                     targets.data(), N);  // dh: the (unused) gathered input of SP
      },
      head_forward_gemms(N, C, V));
  compare(
      world, seconds, "LM head+loss bwd",
      [&] {
        head.backward(tp, dh.data(), dh.data(), dwte.data(), probs.data(), targets.data(), h.data(),
                      wte.data(), 1.0f / N, N);
      },
      head_backward_gemms(N, C, V));
}

// The kernel table's header.
void header(const gpt2::Options& o, bool cpu_time) {
  const gpt2::Config& c = o.model;
  const int N = o.batch * c.seq, C = c.hidden;
  std::printf(
      "# bench_model: V=%d T=%d L=%d C=%d H=%d, batch %d (N=%d rows), float, 1 thread, %s "
      "time, %s\n",
      c.vocab, c.seq, c.layers, C, c.heads, o.batch, N, cpu_time ? "CPU" : "wall",
      load_average().c_str());
  std::printf(
      "# GFLOP/s of the same GEMM FLOPs: ours, then plain GEMMs by each engine; ours/best: the "
      "fastest engine's time over ours (1 = no overhead)\n");
  std::printf("%-18s %10s %10s %10s", "layer", "ours_ms", "GFLOP/s", engine_name(Engine::eigen));
  if (backend::blas::kLinked) std::printf(" %10s", engine_name(Engine::blas));
  std::printf(" %8s\n", "ours/best");
}

// The kernel table: each layer's forward and backward next to its GEMMs as plain calls.
void layer_rows(const Comm& world, double seconds, const gpt2::Options& o, bool cpu_time) {
  const gpt2::Config& c = o.model;
  const int N = o.batch * c.seq, C = c.hidden;
  header(o, cpu_time);
  linear_rows(world, seconds, "QKV", N, C, 3 * C);
  linear_rows(world, seconds, "proj", N, C, C);
  linear_rows(world, seconds, "FC", N, C, 4 * C);
  linear_rows(world, seconds, "MLP proj", N, 4 * C, C);
  attention_rows(world, seconds, o.batch, c.seq, c.heads, c.head_size());
  head_rows(world, seconds, N, C, c.vocab);
}

// Training next to the GEMM-bound ideal, interleaved step by step.
void training_rows(const Comm& world, double train_seconds, const gpt2::Options& o) {
  const gpt2::Config& c = o.model;
  const int N = o.batch * c.seq;
  BenchTrainer trainer(world, o, TokenSource::synthetic(c.vocab));
  const auto plain = plain_engines(step_gemms(c, N));
  const double flops = step_flops(c, o.batch), tokens = double(N);
  require(std::abs(total_flops(step_gemms(c, N, false)) - flops) < 1e-6 * flops,
          "the GEMM list disagrees with eq. (3)");
  std::vector<Variant> variants{bench_clock == Clock::wall
                                    ? Variant([&] { return trainer.step().seconds; })
                                    : timed([&] { (void)trainer.step(); }, bench_clock)};
  for (const auto& p : plain) variants.push_back(timed([&p] { p->run(); }, bench_clock));
  const Timings t = interleaved(world, train_seconds, variants);
  const double step_s = t.median(0), ideal_s = median(t.fastest(1, variants.size()));
  std::printf(
      "\n# training step: %.3f GFLOP (eq. 3: 72 B s l h^2 (1 + s/6h + V/12lh)); "
      "6 x params x tokens = %.3f GFLOP; computed (attention in causal blocks) %.3f GFLOP\n",
      flops / 1e9, 6.0 * c.parameter_count() * tokens / 1e9, plain[0]->flops() / 1e9);
  std::printf("%-18s %10s %10s %10s %10s %8s\n", "", "ours_ms", "tokens/s", "ideal_ms", "tokens/s",
              "ours/ideal");
  std::printf("%-18s %10.1f %10.0f %10.1f %10.0f %8.2f\n", "training step", step_s * 1e3,
              tokens / step_s, ideal_s * 1e3, tokens / ideal_s,
              t.ratio_to_fastest(0, 1, variants.size()));
  std::printf("# ideal = the step's GEMMs as plain calls, the faster engine of each repetition:");
  for (std::size_t k = 1; k < variants.size(); ++k)
    std::printf(" %s %.1f GFLOP/s", engine_name(plain[k - 1]->engine()),
                plain[0]->flops() / 1e9 / t.median(k));
  std::printf("; ours: %.1f GFLOP/s of model FLOPs; ratios: medians of per-repetition ratios; %s\n",
              flops / 1e9 / step_s, load_average().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    double seconds = 1.5, train_seconds = 20;
    cli::App app{"Single-process training of the bench model next to its GEMM-bound ideal."};
    app.add_option("--seconds", seconds, "time per table row (both variants)")
        ->capture_default_str();
    app.add_option("--train-seconds", train_seconds, "time for the training rows")
        ->capture_default_str();
    bool cpu_time = false;
    app.add_flag("--cpu-time", cpu_time,
                 "time by the process's CPU time instead of wall time (on a busy machine)");
    bool only_attention = false;
    app.add_flag("--attention", only_attention, "only the attention rows (no other layers)");
    parse_command_line(app, argc, argv, world);
    if (cpu_time) bench_clock = Clock::cpu;
    require(world.size() == 1, "bench_model runs as one process (no mpiexec -n > 1)");
    configure_threads(world, 1);
    const gpt2::Options o = bench_options();
    if (only_attention) {
      header(o, cpu_time);
      attention_rows(world, seconds, o.batch, o.model.seq, o.model.heads, o.model.head_size());
      return 0;
    }
    layer_rows(world, seconds, o, cpu_time);
    training_rows(world, train_seconds, o);
    return 0;
  });
}
