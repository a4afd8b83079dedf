// bench/predict: the cost model's step time (costmodel/predict.hpp, calibrated on this machine by
// costmodel/calibrate.hpp) next to the measured step time of the same runs, with their ratio.
//
//   mpiexec -n 8 ./bench_predict [--steps 3] [--layers 8 --hidden 256 --heads 8 --vocab 4096
//                                 --seq 128 --batch 16]
//
// The runs are examples/zero_vs_3d's five 8-rank configurations of one model
// (examples/comparison.hpp). Each is calibrated right before it runs, on all ranks at once (the
// oversubscription of the run itself: see calibrate.hpp): GEMM FLOP/s and the other kernels at its
// shapes, its calls inside the microbatch loop after its own compute between calls ("gap"), the
// calls after the loop after a short compute (measured once, for the first run that makes them).
// Measured: the mean over --steps steps (after one warm-up step) of the slowest rank's step.
#include <cstdio>
#include <trident/costmodel/measured.hpp>
#include <trident/costmodel/predict.hpp>
#include <trident/io/cli.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/trident.hpp>

#include "../examples/comparison.hpp"

using namespace trident;
using namespace trident::costmodel;
using namespace trident::examples;

namespace {
void print_fits(const char* what, const Calibration::Calls& calls) {
  std::printf("#   %s:", what);
  for (const auto& [call, fit] : calls)
    std::printf("  %s/%d %.2f ms + %.3f GB/s", to_string(call.first), call.second,
                fit.latency * 1e3, fit.bandwidth / 1e9);
  std::printf("\n");
}
}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    gpt2::Config model = comparison_model();
    int batch = kComparisonBatch, steps = 3;
    cli::App app{"Predicted (calibrated cost model) vs measured step time of zero_vs_3d's runs."};
    add_model_options(app, model);
    app.add_option("--batch", batch, "sequences per step")->capture_default_str();
    app.add_option("--steps", steps, "measured steps per run")->capture_default_str();
    parse_command_line(app, argc, argv, world);
    require(world.size() == 8, "bench_predict compares 8-rank configurations: mpiexec -n 8 (got " +
                                   std::to_string(world.size()) + " ranks)");
    require(steps >= 1, "--steps must be at least 1");
    const int threads = configure_threads(world);
    if (world.rank() == 0)
      std::printf(
          "# bench_predict: %d ranks x %d thread(s) on %d cores; GPT L=%d C=%d H=%d V=%d "
          "T=%d, batch %d; float\n"
          "%-20s %8s %7s %11s %10s %10s %8s %8s | predicted, s: %7s %6s %6s %6s %6s\n",
          world.size(), threads, cores_available(), model.layers, model.hidden, model.heads,
          model.vocab, model.seq, batch, "run", "GFLOP/s", "gap_ms", "measured_s", "predicted",
          "pred/meas", "bubble", "formula", "compute", "TP", "PP", "DP", "after");
    const TokenSource data = TokenSource::synthetic(model.vocab);
    const Precision precision = trident_precision<float, float>();
    const std::vector<NamedRun> runs = comparison_runs(model, batch);
    for (const NamedRun& run : runs) validate(run.options, world.size());  // before any run
    Calibration cal;
    for (const NamedRun& run : runs) {
      const gpt2::Options& o = run.options;
      cal = calibrate_run(world, o, precision, &cal);
      const Prediction p = predict(o, precision, measured_machine(cal));
      const MeasuredRun m = measure_run<float, float>(world, o, data, steps);
      if (world.rank() != 0) continue;
      const StagePrediction* slow = &p.stages.front();
      for (const StagePrediction& s : p.stages)
        if (s.microbatch_s > slow->microbatch_s) slow = &s;
      std::printf(
          "%-20s %8.1f %7.1f %11.3f %10.3f %10.2f %8.3f %8.3f | %21.3f %6.3f %6.3f %6.3f %6.3f\n",
          run.name.c_str(), cal.gemm_flops / 1e9, cal.gap_s * 1e3, m.step_s, p.step_s,
          p.step_s / m.step_s, m.report.bubble, p.bubble_formula, slow->compute_s, slow->seconds.tp,
          slow->seconds.pp, slow->seconds.dp, p.after_s);
      std::printf(
          "#   kernels per microbatch: layer %.2f ms, loss %.2f ms; buffers %.2f GB/s; "
          "AdamW %.0f M/s\n",
          cal.layer_kernels_s * 1e3, cal.head_kernels_s * 1e3, cal.fill_bytes / 1e9,
          cal.adamw_rate / 1e6);
      print_fits("loop calls", cal.loop_calls);
      std::fflush(stdout);
    }
    if (world.rank() == 0) print_fits("calls after the loop", cal.calls);
    return 0;
  });
}
