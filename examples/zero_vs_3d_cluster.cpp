// examples/zero_vs_3d_cluster: with ZeRO, why do we still need 3D parallelism? Measured on a
// cluster: 2 nodes of 4 ranks joined by a slow link (emulated on one machine, as root).
//
//   sh cmake/cluster.sh --nodes 2 --ranks-per-node 4 --link 1gbit -- ./zero_vs_3d_cluster
//
// One GPT (zero_vs_3d's, wider and shallower, on 256 tokens per step), four ways: pure ZeRO-3 over
// DP = 8 (DP crosses the link); TP4 inside each node with PP2 across (only the pipeline's
// activations cross); TP2-PP2-DP2 (the same); TP8 spanning the link (every layer's all-reduces
// cross). Each is measured (step time; bytes through the nodes' network interfaces, core/wire.hpp)
// in rounds, one step of each configuration per round, and predicted by the cost model
// (plan/predict.hpp) with the calls that cross nodes priced on the link's bandwidth as MPI gets it
// here (plan/inter_node.hpp's measure_link and over_link), side by side. Step times that differ
// by less than the noise band (the largest spread of one configuration's rounds) are printed as
// ties: the ranking claims only the order it measured.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <trident/mesh/topology.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/plan/inter_node.hpp>
#include <trident/plan/measured.hpp>
#include <trident/trident.hpp>

using namespace trident;
using namespace trident::plan;

namespace {

constexpr double kMB = 1e6;

struct Row {
  std::string name, crosses;
  double measured_s = 0, predicted_s = 0, wire = 0, wire_formula = 0, link_s = 0;
  double nominal_s = 0;                 // predicted with the link at its nominal rate
  double steps_min = 0, steps_max = 0;  // the fastest and slowest measured step
  StagePrediction slowest;              // the predicted stage with the longest microbatch
  double axis_s[3] = {};  // measured seconds per step in TP's, PP's, DP's calls, slowest rank
};

std::vector<NamedRun> cluster_runs(const gpt2::Config& model, int batch) {
  return named_runs(model, batch,
                    {{"ZeRO-3 DP8", {1, 1, 8}, 3},
                     {"TP4-PP2 ZeRO-1", {4, 2, 1}, 1},
                     {"TP2-PP2-DP2 ZeRO-1", {2, 2, 2}, 1},
                     {"TP8 ZeRO-1", {8, 1, 1}, 1}});
}

// Each rank's bytes per step per axis as the cost model predicts them (its stage's).
std::vector<RankFigures> predicted_ranks(const gpt2::Options& o, const Prediction& p) {
  std::vector<RankFigures> ranks(std::size_t(o.mesh.product()));
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const AxisFigures& b = p.stages[r / (o.mesh.tp * o.mesh.dp)].bytes;
    ranks[r].formula = {b.tp, b.pp, b.dp, b.emb};
  }
  return ranks;
}

std::string crossing_axes(const AxisFigures& x) {
  std::string s;
  for (auto [name, v] : {std::pair{"TP", x.tp}, {"PP", x.pp}, {"DP", x.dp}, {"emb", x.emb}})
    if (v > 0) s += (s.empty() ? "" : "+") + std::string(name);
  return s.empty() ? "-" : s;
}

std::vector<int> ranking(const std::vector<Row>& rows, double Row::*by) {
  std::vector<int> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return rows[a].*by < rows[b].*by; });
  return order;
}

// Two measured step times are told apart when they differ by more than `band` of the faster:
// the largest spread (slowest minus fastest round, over the mean) of any configuration's rounds.
bool apart(double a, double b, double band) {
  return std::abs(a - b) > band * std::min(a, b);
}

double noise_band(const std::vector<Row>& rows) {
  double band = 0;
  for (const Row& r : rows) band = std::max(band, (r.steps_max - r.steps_min) / r.measured_s);
  return band;
}

void print(const std::vector<Row>& rows, double link_bps, int steps) {
  std::printf(
      "\nstep time, s: measured (mean of %d rounds, slowest rank) / predicted (the cost model "
      "calibrated on these ranks, calls that cross nodes at the link's rate as MPI measured it, "
      "shared by their groups); inter-node MB per step, all nodes, both directions: measured (the "
      "nodes' "
      "interfaces: payload, headers, TCP acks) / predicted (the model's bytes per rank, as "
      "MPICH's algorithms move them, plan/inter_node.hpp); link s: predicted MB each way / the "
      "link's rate; nominal: the step predicted with the link at its nominal %.3g bit/s\n",
      steps, link_bps);
  std::printf(
      "%-20s %-8s %10s %10s %6s | %10s %10s %6s | %7s | predicted: %7s %6s %6s %6s | %10s\n", "run",
      "crosses", "measured", "predicted", "ratio", "wire MB", "predicted", "ratio", "link s",
      "compute", "TP", "PP", "DP", "nominal");
  for (const Row& r : rows)
    std::printf(
        "%-20s %-8s %10.3f %10.3f %6.2f | %10.2f %10.2f %6.3f | %7.3f | %18.3f %6.3f %6.3f "
        "%6.3f | %10.3f\n",
        r.name.c_str(), r.crosses.c_str(), r.measured_s, r.predicted_s,
        r.predicted_s / r.measured_s, r.wire / kMB, r.wire_formula / kMB, r.wire / r.wire_formula,
        r.link_s, r.slowest.compute_s, r.slowest.seconds.tp, r.slowest.seconds.pp,
        r.slowest.seconds.dp, r.nominal_s);
  std::printf(
      "\nseconds per step inside each axis' calls and waits: measured (CommStats, slowest rank) / "
      "predicted (slowest stage)\n%-20s %15s %15s %15s\n",
      "run", "TP", "PP", "DP");
  for (const Row& r : rows)
    std::printf("%-20s %6.3f / %-6.3f %6.3f / %-6.3f %6.3f / %-6.3f\n", r.name.c_str(), r.axis_s[0],
                r.slowest.seconds.tp, r.axis_s[1], r.slowest.seconds.pp, r.axis_s[2],
                r.slowest.seconds.dp);
  const double band = noise_band(rows);
  const std::vector<int> measured = ranking(rows, &Row::measured_s);
  std::string order;  // fastest first, '~' between neighbours within the noise band
  for (std::size_t k = 0; k < measured.size(); ++k)
    order +=
        (k == 0                                                                        ? ""
         : apart(rows[measured[k - 1]].measured_s, rows[measured[k]].measured_s, band) ? " < "
                                                                                       : " ~ ") +
        rows[measured[k]].name;
  auto agrees = [&](double Row::*by, std::string& ties) {  // every pair measured apart, in order
    int told = 0, same = 0;
    ties.clear();
    for (std::size_t a = 0; a < rows.size(); ++a)
      for (std::size_t b = a + 1; b < rows.size(); ++b) {
        if (!apart(rows[a].measured_s, rows[b].measured_s, band)) {
          if (by == &Row::predicted_s)
            ties += (ties.empty() ? "" : ", ") + rows[a].name + " ~ " + rows[b].name;
          continue;
        }
        ++told;
        same += (rows[a].measured_s < rows[b].measured_s) == (rows[a].*by < rows[b].*by);
      }
    return std::to_string(same) + " of the " + std::to_string(told) + " pairs measured apart";
  };
  auto names = [&](const std::vector<int>& order) {
    std::string s;
    for (int i : order) s += (s.empty() ? "" : " < ") + rows[i].name;
    return s;
  };
  std::string ties, unused;
  const std::string predicted = agrees(&Row::predicted_s, ties),
                    at_nominal = agrees(&Row::nominal_s, unused);
  std::printf(
      "\nnoise band: %.0f%% (the largest spread of one configuration's %d steps, slowest minus "
      "fastest over its mean); two step times closer than that are not told apart (~)\n"
      "fastest first, measured:  %s\n"
      "fastest first, predicted: %s (the same order for %s)\n"
      "at the nominal link rate: %s (the same order for %s)\n"
      "within the noise: %s\n",
      100 * band, steps, order.c_str(), names(ranking(rows, &Row::predicted_s)).c_str(),
      predicted.c_str(), names(ranking(rows, &Row::nominal_s)).c_str(), at_nominal.c_str(),
      ties.empty() ? "none" : ties.c_str());
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  in >> one;
  return one;
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    // zero_vs_3d's model made wider (C = 768) and shallower (L = 4), on 16 sequences of 16
    // tokens: 31.5 M parameters for 256 tokens a step, so that ZeRO-3's per-step parameter
    // traffic (two all-gathers and a reduce-scatter of every parameter, plan/inter_node.hpp)
    // outweighs the compute, as on a real cluster, whose accelerators compute far more per byte of
    // link than these 2 cores
    gpt2::Config model = plan::comparison_model();
    model.layers = 4, model.hidden = 768, model.seq = 16;
    int batch = plan::kComparisonBatch, steps = 3;
    CLI::App app{"ZeRO-3 next to 3D parallelism on 2 emulated nodes x 4 ranks and a slow link."};
    add_model_options(app, model);
    app.add_option("--batch", batch, "sequences per step (global batch)")->capture_default_str();
    app.add_option("--steps", steps,
                   "measured steps per configuration, one per round (each after a warm-up)")
        ->capture_default_str();
    parse_command_line(app, argc, argv, world);
    const char* link = std::getenv("TRIDENT_LINK_BPS");
    require(link != nullptr && world.size() == 8,
            "zero_vs_3d_cluster runs on 2 nodes x 4 ranks: sh cmake/cluster.sh --nodes 2 "
            "--ranks-per-node 4 --link 1gbit -- ./zero_vs_3d_cluster");
    require(steps >= 1, "--steps must be at least 1");
    const double link_bps = std::atof(link);
    const InterNode nodes{node_comm(world).size()};
    require(nodes.ranks_per_node == 4, "zero_vs_3d_cluster needs 4 ranks on each of 2 nodes");
    const int threads = configure_threads(world);
    const Precision precision = trident_precision<float, float>();
    if (world.rank() == 0)
      std::printf(
          "zero_vs_3d_cluster: GPT L=%d C=%d H=%d V=%d T=%d, %lld parameters; batch %d; float; "
          "2 nodes x 4 ranks x %d thread(s) on %d cores; link %.3g bit/s each way per node; "
          "load average %.2f\n",
          model.layers, model.hidden, model.heads, model.vocab, model.seq, model.parameter_count(),
          batch, threads, cores_available(), link_bps, load_average());
    const std::vector<NamedRun> runs = cluster_runs(model, batch);
    for (const NamedRun& run : runs) validate(run.options, world.size());
    // the link as MPI gets it here: below its rate when 8 ranks share 2 cores, since MPICH moves
    // bytes only while a rank is inside an MPI call
    const LinearFit link_fit = measure_link(world, nodes);
    if (world.rank() == 0)
      std::printf(
          "the link measured by MPI, 4 pairs exchanging at once: %.3g bit/s each way, "
          "%.0f us latency\n",
          8 * link_fit.bandwidth, 1e6 * link_fit.latency);
    const TokenSource data = TokenSource::synthetic(model.vocab);
    std::vector<Row> rows;
    Calibration cal;
    for (const NamedRun& run : runs) {  // each calibrated and predicted
      cal = calibrate_run(world, run.options, precision, &cal);
      const Prediction p =  // calls that cross nodes at the link's rate as MPI gets it
          predict(run.options, precision,
                  over_link(measured_machine(cal), run.options, nodes, link_fit.bandwidth));
      const AxisFigures x =
          inter_node_bytes(run.options, predicted_ranks(run.options, p), precision, nodes);
      Row r;
      r.name = run.name, r.crosses = crossing_axes(x);
      r.predicted_s = p.step_s, r.wire_formula = x.total();
      r.nominal_s = predict(run.options, precision,
                            over_link(measured_machine(cal), run.options, nodes, link_bps / 8))
                        .step_s;
      for (const StagePrediction& st : p.stages)
        if (st.microbatch_s >= r.slowest.microbatch_s) r.slowest = st;
      r.link_s = x.total() / 2 / (link_bps / 8);
      rows.push_back(r);
    }
    // measured in rounds, one step of each configuration per round (after a warm-up), so that a
    // change in the machine's load between minutes reaches every configuration alike
    for (int round = 0; round < steps; ++round)
      for (std::size_t i = 0; i < runs.size(); ++i) {
        Row& r = rows[i];
        if (round == 0) warn_if_tp_spans_nodes(Mesh<>(world, runs[i].options.mesh));  // TP8 does
        const MeasuredRun m = measure_run<float, float>(world, runs[i].options, data, 1);
        r.measured_s += m.step_s / steps, r.wire += m.wire / steps;
        r.steps_min = round == 0 ? m.step_s : std::min(r.steps_min, m.step_s);
        r.steps_max = std::max(r.steps_max, m.step_s);
        double axis[3] = {};  // the slowest rank's
        for (const auto& rank : m.comm_s)
          for (int k = 0; k < 3; ++k) axis[k] = std::max(axis[k], rank[std::size_t(k)]);
        for (int k = 0; k < 3; ++k) r.axis_s[k] += axis[k] / steps;
        if (world.rank() == 0)
          std::printf("  round %d %-20s %.2f s, %.1f MB over the link (load average %.2f)\n",
                      round + 1, r.name.c_str(), m.step_s, m.wire / kMB, load_average());
        std::fflush(stdout);
      }
    if (world.rank() == 0) print(rows, link_bps, steps);
    return 0;
  });
}
