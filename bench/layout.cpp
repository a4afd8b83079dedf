// bench/layout: --layout auto (costmodel/layout.hpp) against an exhaustive measured sweep. Every
// valid layout of the model is predicted by the cost model calibrated here; a sweep of them —
// the chooser's best predicted few, and the rest of the ranking sampled evenly — is run for a
// few steps each. Printed: each layout predicted next to measured, the chooser's pick (the
// fastest measured of its few) next to the fastest of the sweep, and the rank correlation of
// predicted and measured step times (Kendall's tau-b).
//
//   mpiexec -n 8 ./bench_layout [--sweep 24] [--trials 4] [--steps 2] [--calibration-cache F]
//   sh cmake/cluster.sh --nodes 2 --ranks-per-node 4 --link 1gbit -- build/bench/bench_layout
//
// Model: examples/comparison.hpp's (L=8, C=256, H=8, V=4096, T=128, batch 16), float.
#include <cmath>
#include <cstdio>
#include <trident/costmodel/layout.hpp>
#include <trident/io/cli.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/trident.hpp>

#include "../examples/comparison.hpp"

using namespace trident;
using namespace trident::costmodel;
using namespace trident::examples;

namespace {

// Kendall's tau-b of the pairs (x[i], y[i]): concordant minus discordant pairs over the pairs not
// tied in each (Kendall 1945).
double kendall_tau(const std::vector<double>& x, const std::vector<double>& y) {
  double concordant = 0, discordant = 0, tied_x = 0, tied_y = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = i + 1; j < x.size(); ++j) {
      const double a = x[i] - x[j], b = y[i] - y[j];
      if (a == 0 && b == 0) continue;
      if (a == 0)
        ++tied_x;
      else if (b == 0)
        ++tied_y;
      else
        (a * b > 0 ? concordant : discordant) += 1;
    }
  const double n = concordant + discordant;
  return (concordant - discordant) / std::sqrt((n + tied_x) * (n + tied_y));
}

// The sweep: the first `trials` of the ranking (what --layout auto tries), then the others
// sampled evenly down to the slowest predicted, `count` in all.
std::vector<int> sweep_of(int ranked, int trials, int count) {
  std::vector<int> sweep;
  for (int k = 0; k < std::min(trials, ranked); ++k) sweep.push_back(k);
  const int rest = std::min(count, ranked) - int(sweep.size());
  for (int k = 0; k < rest; ++k)
    sweep.push_back(trials +
                    int(std::lround(double(k) * (ranked - 1 - trials) / std::max(1, rest - 1))));
  return sweep;
}

// Each layout of the sweep predicted next to measured; the pick (the fastest measured of the
// first `trials`) next to the sweep's fastest; Kendall's tau.
void print_sweep(const LayoutChoice& c, const std::vector<int>& sweep, int trials) {
  std::printf("%9s %-44s %11s %10s %6s\n", "predicted", "layout", "step s pred", "step meas",
              "ratio");
  std::vector<double> predicted, measured;
  int pick = sweep.front(), best = sweep.front();
  for (int k : sweep) {
    const LayoutCandidate& x = c.fitting[std::size_t(k)];
    predicted.push_back(x.predicted_s);
    measured.push_back(x.measured_s);
    if (k < trials && x.measured_s < c.fitting[std::size_t(pick)].measured_s) pick = k;
    if (x.measured_s < c.fitting[std::size_t(best)].measured_s) best = k;
    std::printf("%9d %-44s %11.4f %10.4f %6.2f\n", k + 1, layout_name(x.options).c_str(),
                x.predicted_s, x.measured_s, x.predicted_s / x.measured_s);
  }
  const double picked = c.fitting[std::size_t(pick)].measured_s,
               fastest = c.fitting[std::size_t(best)].measured_s;
  std::printf(
      "\n--layout auto picks %s (measured %.4f s), the sweep's fastest is %s (%.4f s): "
      "%.3f x; Kendall's tau of predicted vs measured over the %zu layouts: %.2f\n",
      layout_name(c.fitting[std::size_t(pick)].options).c_str(), picked,
      layout_name(c.fitting[std::size_t(best)].options).c_str(), fastest, picked / fastest,
      sweep.size(), kendall_tau(predicted, measured));
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    gpt2::Options base;
    base.model = comparison_model();
    base.batch = kComparisonBatch;
    int count = 24, steps = 2;
    LayoutSearch search;
    cli::App app{"--layout auto's choice against a measured sweep of layouts."};
    add_model_options(app, base.model);
    app.add_option("--batch", base.batch, "sequences per step")->capture_default_str();
    app.add_option("--sweep", count, "layouts measured")->capture_default_str();
    app.add_option("--trials", search.trials, "layouts --layout auto tries")->capture_default_str();
    app.add_option("--steps", steps, "measured steps per layout")->capture_default_str();
    search.calibration_cache = default_calibration_cache();
    app.add_option("--calibration-cache", search.calibration_cache,
                   "the calibration kept and reused (io/calibration_cache.hpp); none: "
                   "measure every time")
        ->capture_default_str();
    parse_command_line(app, argc, argv, world);
    require(count >= 2 && search.trials >= 1 && steps >= 1,
            "--sweep must be at least 2, --trials and --steps at least 1");
    if (search.calibration_cache == "none") search.calibration_cache.clear();
    const int threads = configure_threads(world);
    const Precision precision = trident_precision<float, float>();
    LayoutChoice c = rank_layouts(world, base, search, precision);
    const std::vector<int> sweep = sweep_of(int(c.fitting.size()), search.trials, count);
    const TokenSource data = TokenSource::synthetic(base.model.vocab);
    for (int k : sweep) measure_layout<float, float>(world, c.fitting[std::size_t(k)], data, steps);
    const int nodes = world.size() / node_comm(world).size();  // collective
    if (world.rank() != 0) return 0;
    std::printf(
        "# bench_layout: %d ranks x %d thread(s) on %d cores (%d nodes); GPT L=%d C=%d "
        "H=%d V=%d T=%d, batch %d; %d valid layouts, %zu measured, %d steps each; calibration "
        "%.1f s (%d measurements reused, %d taken)\n",
        world.size(), threads, cores_available(), nodes, base.model.layers, base.model.hidden,
        base.model.heads, base.model.vocab, base.model.seq, base.batch, c.valid, sweep.size(),
        steps, c.calibration_s, c.calibration_reused, c.calibration_measured);
    print_sweep(c, sweep, search.trials);
    return 0;
  });
}
