// bench/predict: the cost model's step time (plan/predict.hpp, calibrated on this machine by
// plan/calibrate.hpp) next to the measured step time of the same runs, with their ratio.
//
//   mpiexec -n 8 ./bench_predict [--steps 3] [--layers 8 --hidden 256 --heads 8 --vocab 4096
//                                 --seq 128 --batch 16]
//
// The runs are examples/zero_vs_3d's five 8-rank configurations of one model (plan/measured.hpp).
// The calibration runs first, on all ranks at once (the oversubscription of the runs: see
// calibrate.hpp); the GEMM rate is measured again before each run at that run's MLP shape.
// Measured: the mean over --steps steps (after one warm-up step) of the slowest rank's step.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <trident/io/cli.hpp>
#include <trident/plan/measured.hpp>
#include <trident/plan/predict.hpp>
#include <trident/trident.hpp>

using namespace trident;
using namespace trident::plan;

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    GPTConfig model{4096, 128, 8, 256, 8, 1337};
    int batch = 16, steps = 3;
    CLI::App app{"Predicted (calibrated cost model) vs measured step time of zero_vs_3d's runs."};
    app.add_option("--layers", model.layers, "decoder blocks")->capture_default_str();
    app.add_option("--hidden", model.hidden, "hidden size C")->capture_default_str();
    app.add_option("--heads", model.heads, "attention heads")->capture_default_str();
    app.add_option("--vocab", model.vocab, "vocabulary")->capture_default_str();
    app.add_option("--seq", model.seq, "sequence length")->capture_default_str();
    app.add_option("--batch", batch, "sequences per step")->capture_default_str();
    app.add_option("--steps", steps, "measured steps per run")->capture_default_str();
    parse_command_line(app, argc, argv, world);
    require(world.size() == 8, "bench_predict compares 8-rank configurations: mpiexec -n 8");
    require(steps >= 1, "--steps must be at least 1");
    const int threads = configure_threads(world);

    Calibration cal = calibrate(world, batch * model.seq / 8, model.hidden, 4 * model.hidden);
    if (world.rank() == 0) {
      std::printf("# bench_predict: %d ranks, %d thread(s) each; calibrated with all ranks at once\n"
                  "# buffers %.2f GB/s, AdamW %.0f M elements/s per rank; seconds = latency + "
                  "bytes / bandwidth:\n",
                  world.size(), threads, cal.fill_bytes / 1e9, cal.adamw_rate / 1e6);
      for (const auto& [g, fits] : cal.collectives)
        std::printf("#   %d ranks: all_reduce %.2f ms + %.2f GB/s, reduce_scatter %.2f ms + %.2f "
                    "GB/s, all_gather %.2f ms + %.2f GB/s\n",
                    g, fits[0].latency * 1e3, fits[0].bandwidth / 1e9, fits[1].latency * 1e3,
                    fits[1].bandwidth / 1e9, fits[2].latency * 1e3, fits[2].bandwidth / 1e9);
      std::printf("#   point-to-point %.2f ms + %.2f GB/s\n", cal.p2p.latency * 1e3,
                  cal.p2p.bandwidth / 1e9);
      std::printf("%-20s %8s %11s %10s %10s %7s | predicted parts, s: %7s %6s %6s %6s %6s\n",
                  "run", "GFLOP/s", "measured_s", "predicted", "pred/meas", "bubble", "compute",
                  "TP", "PP", "DP", "after");
    }
    const TokenSource data = TokenSource::synthetic(model.vocab);
    for (const NamedRun& run : comparison_runs(model, batch)) {
      const TrainOptions& o = run.options;
      cal.gemm_flops = measure_gemm_flops(world, o.rows_per_microbatch() * model.seq,
                                          model.hidden, 4 * model.hidden / o.mesh.tp);
      const Prediction p = predict(o, trident_precision<float, float>(), measured_machine(cal));
      const MeasuredRun m = measure_run<float, float>(world, o, data, steps);
      if (world.rank() != 0) continue;
      const StagePrediction* slow = &p.stages.front();
      for (const StagePrediction& s : p.stages)
        if (s.microbatch_s > slow->microbatch_s) slow = &s;
      std::printf("%-20s %8.1f %11.3f %10.3f %10.2f %7.3f | %26.3f %6.3f %6.3f %6.3f %6.3f\n",
                  run.name.c_str(), cal.gemm_flops / 1e9, m.step_s, p.step_s, p.step_s / m.step_s,
                  m.report.bubble, slow->compute_s, slow->seconds.tp, slow->seconds.pp,
                  slow->seconds.dp, p.after_s);
      std::fflush(stdout);
    }
    return 0;
  });
}
