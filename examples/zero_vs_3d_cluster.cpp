// examples/zero_vs_3d_cluster: with ZeRO, why do we still need 3D parallelism? Measured on a
// cluster: 2 nodes of 4 ranks joined by a slow link (emulated on one machine, as root).
//
//   sh cmake/cluster.sh --nodes 2 --ranks-per-node 4 --link 100mbit -- ./zero_vs_3d_cluster
//
// One GPT four ways: pure ZeRO-3 over DP = 8 (DP crosses the link); TP4 inside each node with PP2
// across (only the pipeline's activations and the tied embedding's gradient cross); TP2-PP2-DP2
// (the same, half the activations); TP8 spanning the link (every layer's all-reduces cross). Each
// is measured (step time; bytes through the nodes' network interfaces, core/wire.hpp) in rounds,
// one step of each configuration per round, and predicted by the cost model (costmodel/predict.hpp)
// with the calls that cross nodes priced on the link's bandwidth as MPI gets it here
// (costmodel/inter_node.hpp's measure_link and over_link), side by side, with both rankings and
// whether they agree. Two configurations are told apart when every round of one was faster
// than every round of the other.
//
// The sizes are chosen so that the link, not these 2 cores, orders the four (the defaults below
// say how). The link is 100 Mbit/s rather than 1 Gbit/s so that a node computes about as much
// per byte of its link as a DGX A100 node does (the example prints both ratios: 5300-6400
// FLOP/byte measured here, a DGX A100's 7488); at 1 Gbit/s these cores would compute ten times
// less per byte than a real cluster, compute and the scheduling of 8 ranks on 2 cores would weigh
// as much as the link, and the rounds would not tell the four apart (examples/README.md, 6).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <numeric>
#include <trident/costmodel/inter_node.hpp>
#include <trident/costmodel/measured.hpp>
#include <trident/io/cli.hpp>
#include <trident/io/html_report.hpp>
#include <trident/mesh/topology.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/plan/cluster.hpp>
#include <trident/trident.hpp>

#include "comparison.hpp"

using namespace trident;
using namespace trident::costmodel;
using namespace trident::examples;

namespace {

constexpr double kMB = 1e6;

struct Row {
  std::string name, crosses;
  double measured_s = 0, predicted_s = 0, wire = 0, wire_formula = 0, link_s = 0;
  double nominal_s = 0;                 // predicted with the link at its nominal rate
  double steps_min = 0, steps_max = 0;  // the fastest and slowest measured step
  int rounds = 0;                       // measured
  StagePrediction slowest;              // the predicted stage with the longest microbatch
  double axis_s[3] = {};  // measured seconds per step in TP's, PP's, DP's calls, slowest rank
};

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

// a is measured faster than b: every round of a faster than every round of b, over at least 2
// rounds (one round tells nothing apart: its order may be the machine's load of that moment)
bool faster(const Row& a, const Row& b) {
  return a.rounds >= 2 && b.rounds >= 2 && a.steps_max < b.steps_min;
}

// Two tables: each run's step time measured and predicted with both ranks; then its bytes over
// the link measured and predicted, and the predicted step's parts.
void print_table(const std::vector<Row>& rows, double link_bps, int steps) {
  const std::vector<int> measured = ranking(rows, &Row::measured_s),
                         predicted = ranking(rows, &Row::predicted_s);
  std::vector<int> measured_rank(rows.size()), predicted_rank(rows.size());
  for (std::size_t k = 0; k < rows.size(); ++k) {
    measured_rank[std::size_t(measured[k])] = int(k) + 1;
    predicted_rank[std::size_t(predicted[k])] = int(k) + 1;
  }
  std::printf("\n%-20s %-7s %8s %-13s %9s %6s %5s\n", "run", "crosses", "measured", "  (rounds)",
              "predicted", "ratio", "rank");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::printf("%-20s %-7s %8.3f (%5.2f-%5.2f) %9.3f %6.2f %2d/%-2d\n", r.name.c_str(),
                r.crosses.c_str(), r.measured_s, r.steps_min, r.steps_max, r.predicted_s,
                r.predicted_s / r.measured_s, measured_rank[i], predicted_rank[i]);
  }
  print_wrapped(
      "step time, s: measured (mean of %d rounds, slowest rank; the fastest and slowest round) / "
      "predicted (the cost model calibrated on these ranks, calls that cross nodes at the link's "
      "rate as MPI measured it, shared by their groups); rank: fastest = 1, measured / "
      "predicted\n",
      steps);
  std::printf("\n%-20s %8s %9s %6s | %6s | predicted: %7s %6s %6s %6s | %7s\n", "run", "wire MB",
              "predicted", "ratio", "link s", "compute", "TP", "PP", "DP", "nominal");
  for (const Row& r : rows)
    std::printf("%-20s %8.2f %9.2f %6.3f | %6.3f | %18.3f %6.3f %6.3f %6.3f | %7.3f\n",
                r.name.c_str(), r.wire / kMB, r.wire_formula / kMB, r.wire / r.wire_formula,
                r.link_s, r.slowest.compute_s, r.slowest.seconds.tp, r.slowest.seconds.pp,
                r.slowest.seconds.dp, r.nominal_s);
  print_wrapped(
      "wire MB: inter-node MB per step, all nodes, both directions: measured (the nodes' "
      "interfaces: payload, headers, TCP acks) / predicted (the model's bytes per rank, as MPICH's "
      "algorithms move them, costmodel/inter_node.hpp); link s: predicted MB each way / the "
      "link's rate; predicted: the slowest stage's seconds per step in compute and in each axis' "
      "calls; nominal: the step predicted with the link at its nominal %.3g bit/s\n",
      link_bps);
}

// Seconds inside each axis' calls, measured next to predicted.
void print_axis_seconds(const std::vector<Row>& rows) {
  print_wrapped(
      "\nseconds per step inside each axis' calls and waits: measured (CommStats, slowest rank) / "
      "predicted (slowest stage)\n");
  std::printf("%-20s %15s %15s %15s\n", "run", "TP", "PP", "DP");
  for (const Row& r : rows)
    std::printf("%-20s %6.3f / %-6.3f %6.3f / %-6.3f %6.3f / %-6.3f\n", r.name.c_str(), r.axis_s[0],
                r.slowest.seconds.tp, r.axis_s[1], r.slowest.seconds.pp, r.axis_s[2],
                r.slowest.seconds.dp);
}

// The rankings, fastest first ('<' where the neighbours were told apart, '~' where their rounds
// overlap), and whether the predicted one matches the measured one pair by pair.
void print_rankings(const std::vector<Row>& rows) {
  const std::vector<int> measured = ranking(rows, &Row::measured_s),
                         predicted = ranking(rows, &Row::predicted_s);
  auto order = [&](const std::vector<int>& by, bool measured_order) {
    std::string s;
    for (std::size_t k = 0; k < by.size(); ++k) {
      const Row &prev = rows[std::size_t(by[k > 0 ? k - 1 : 0])], &r = rows[std::size_t(by[k])];
      s += (k == 0 ? "" : !measured_order || faster(prev, r) ? " < " : " ~ ") + r.name;
    }
    return s;
  };
  std::string against, overlap;  // pairs ordered against the prediction; pairs not told apart
  int agree = 0, pairs = 0;
  for (std::size_t a = 0; a < rows.size(); ++a)
    for (std::size_t b = a + 1; b < rows.size(); ++b, ++pairs) {
      const Row &x = rows[a], &y = rows[b];
      const std::string pair = x.name + " / " + y.name;
      if (!faster(x, y) && !faster(y, x))
        overlap += (overlap.empty() ? "" : ", ") + pair;
      else if (faster(x, y) != (x.predicted_s < y.predicted_s))
        against += (against.empty() ? "" : ", ") + pair;
      else
        ++agree;
    }
  std::printf("\nfastest first, measured:  %s\nfastest first, predicted: %s\n",
              order(measured, true).c_str(), order(predicted, false).c_str());
  if (!against.empty())
    print_wrapped(
        "the predicted ranking does not match the measured one: measured in the other "
        "order: %s\n",
        against.c_str());
  else if (!overlap.empty())
    print_wrapped(
        "the measurement does not tell the whole ranking: %d of the %d pairs measured "
        "apart (every round of one faster than every round of the other), all in the "
        "predicted order; rounds overlap: %s\n",
        agree, pairs, overlap.c_str());
  else
    print_wrapped(
        "the predicted ranking matches the measured one: all %d pairs measured apart "
        "(every round of one faster than every round of the other), each in the "
        "predicted order\n",
        pairs);
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  in >> one;
  return one;
}

struct Flags {
  gpt2::Config model;
  int batch = kClusterBatch, steps = 3;
  std::string html;  // --html: the comparison as a web page
};

// Sized so that the link orders the four, by its bytes per step (costmodel/inter_node.hpp; N
// tokens, Psi parameters, 4-byte floats, both directions): ZeRO-3 7.5 Psi x 4 (two all-gathers
// and a reduce-scatter of every parameter); TP8 2 (4L + 2) N C x 4 (4 all-reduces a layer, the
// embedding's and the head's, each 2 n across); TP4-PP2 8 N C x 4 (each TP rank sends its copy
// of the activations) and TP2-PP2-DP2 4 N C x 4, both plus the tied embedding's gradient, 2 V C
// x 4. A byte vocabulary (V = 256) keeps that gradient small next to the activations, so TP4-PP2
// sends about twice TP2-PP2-DP2's bytes; N = 24 x 64 = 1536 keeps TP8's under half of ZeRO-3's;
// C = 384, L = 2 (3.7 M parameters) keeps a step's compute under a second here.
Flags parse_flags(const Comm& world, int argc, char** argv) {
  Flags f;
  f.model = cluster_model();
  cli::App app{"ZeRO-3 next to 3D parallelism on 2 emulated nodes x 4 ranks and a slow link."};
  add_model_options(app, f.model);
  cli::Option* batch = app.add_option("--batch", f.batch, "sequences per step (global batch)")
                           ->capture_default_str();
  cli::Option* steps =
      app.add_option(
             "--steps", f.steps,
             "measured steps per configuration, one per round (after one warm-up step each)")
          ->capture_default_str();
  app.add_option("--html", f.html, "write the comparison as one self-contained web page");
  bool quick = false;
  app.add_flag("--quick", quick,
               "about a minute: 2 rounds (the fewest that can tell two runs apart) and a batch of "
               "8 sequences (a third of the activations' bytes; ZeRO-3's stay)");
  parse_command_line(app, argc, argv, world);
  if (quick) {
    require(!steps->count() && !batch->count(),
            "--quick chooses the rounds and the batch itself: give it without --steps and --batch");
    f.steps = 2;
    f.batch = 8;
  }
  return f;
}

// The link's nominal rate (cmake/cluster.sh's TRIDENT_LINK_BPS), bit/s; 2 nodes x 4 ranks.
double nominal_link_bps(const Comm& world, const Flags& f) {
  const char* link = std::getenv("TRIDENT_LINK_BPS");
  require(link != nullptr && world.size() == 8,
          "zero_vs_3d_cluster runs on 2 nodes x 4 ranks: sh cmake/cluster.sh --nodes 2 "
          "--ranks-per-node 4 --link 100mbit -- ./zero_vs_3d_cluster");
  require(f.steps >= 1, "--steps must be at least 1");
  return std::atof(link);
}

// Each run calibrated on these ranks and predicted, with the calls that cross nodes at the
// link's rate as MPI gets it (link_fit) and at its nominal rate; node_flops: a node's sgemm
// FLOP/s at the full width, all ranks computing.
std::vector<Row> predicted_rows(const Comm& world, const std::vector<NamedRun>& runs,
                                const Precision& precision, const InterNode& nodes,
                                const LinearFit& link_fit, double link_bps, double& node_flops) {
  std::vector<Row> rows;
  Calibration cal;
  for (const NamedRun& run : runs) {
    // the calls that cross nodes up to 256 KiB: their bytes are priced on the link
    cal = calibrate_run(world, run.options, precision, &cal, std::size_t(256) << 10);
    if (rows.empty()) node_flops = nodes.ranks_per_node * cal.gemm_flops;
    const Prediction p =  // calls that cross nodes at the link's rate as MPI gets it
        predict(run.options, precision,
                over_link(measured_machine(cal), run.options, nodes, link_fit.bandwidth));
    const AxisFigures x =
        inter_node_bytes(run.options, predicted_ranks(run.options, p), precision, nodes);
    Row r;
    r.name = run.name;
    r.crosses = crossing_axes(x);
    r.predicted_s = p.step_s;
    r.wire_formula = x.total();
    r.nominal_s = predict(run.options, precision,
                          over_link(measured_machine(cal), run.options, nodes, link_bps / 8))
                      .step_s;
    for (const StagePrediction& st : p.stages)
      if (st.microbatch_s >= r.slowest.microbatch_s) r.slowest = st;
    r.link_s = x.total() / 2 / (link_bps / 8);
    rows.push_back(r);
  }
  return rows;
}

// Compute per byte of link, here and on a DGX A100 node (plan/cluster.hpp).
void print_flop_per_byte(double node_flops, double link_bps) {
  const ClusterSpec a100;
  print_wrapped(
      "compute per byte of link: a node here %.3g GFLOP/s (4 ranks at the calibrated sgemm "
      "rate) over %.3g MB/s each way = %.0f FLOP/byte; a DGX A100 node %d x %.0f TFLOP/s x "
      "%.1f over %d x %.0f GB/s = %.0f FLOP/byte (plan/cluster.hpp)\n",
      node_flops / 1e9, link_bps / 8 / kMB, node_flops / (link_bps / 8), a100.gpus_per_node,
      a100.peak_flops / 1e12, a100.efficiency, a100.gpus_per_node, a100.inter_node_bw / 1e9,
      a100.peak_flops * a100.efficiency / a100.inter_node_bw);
}

// Measured in rounds, one step of each configuration per round, so that a change in the
// machine's load between minutes reaches every configuration alike. The four trainers are built
// and warmed up (one step each) before the first round and kept for the others.
void measure_rounds(const Comm& world, const std::vector<NamedRun>& runs, const TokenSource& data,
                    int steps, std::vector<Row>& rows) {
  std::vector<std::unique_ptr<gpt2::Trainer<float, float>>> trainers;
  for (const NamedRun& run : runs) {
    warn_if_tp_spans_nodes(Mesh<>(world, run.options.mesh));  // TP8 does
    trainers.push_back(std::make_unique<gpt2::Trainer<float, float>>(world, run.options, data));
    (void)trainers.back()->step();  // the warm-up
  }
  for (int round = 0; round < steps; ++round)
    for (std::size_t i = 0; i < runs.size(); ++i) {
      Row& r = rows[i];
      const MeasuredRun m = measure_steps(world, *trainers[i], 1);
      r.measured_s += m.step_s / steps;
      r.wire += m.wire / steps;
      r.rounds = round + 1;
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
}

// --html: each configuration's step time measured next to the cost model's, and its bytes over
// the link measured next to the formula's (io/html_report.hpp); the figures as the page's JSON.
void write_page(const std::string& path, const std::vector<Row>& rows, int steps) {
  io::BarChart time, wire;
  time.title = "Step time: measured, mean of " + std::to_string(steps) + " rounds, and predicted";
  time.unit = "s";
  time.marker_name = "predicted (costmodel/predict.hpp, the link as MPI gets it)";
  time.series.push_back({"measured", io::kind_colour(0), {}});
  wire.title = "Bytes over the link per step: measured, and the formula";
  wire.unit = "MB";
  wire.marker_name = "formula (costmodel/inter_node.hpp)";
  wire.series.push_back({"over the link", io::kind_colour(2), {}});
  nlohmann::json data;
  for (const Row& r : rows) {
    time.labels.push_back(r.name);
    wire.labels.push_back(r.name);
    time.series[0].values.push_back(r.measured_s);
    time.markers.push_back(r.predicted_s);
    wire.series[0].values.push_back(r.wire / kMB);
    wire.markers.push_back(r.wire_formula / kMB);
    data["runs"].push_back({{"name", r.name},
                            {"measured_step_s", r.measured_s},
                            {"predicted_step_s", r.predicted_s},
                            {"wire_bytes", r.wire},
                            {"wire_formula_bytes", r.wire_formula}});
  }
  io::write_text(path, io::html_page("zero_vs_3d_cluster",
                                     "<h1>ZeRO-3 next to 3D parallelism, 2 nodes x 4 ranks</h1>" +
                                         io::bar_chart_svg(time) + io::bar_chart_svg(wire),
                                     data));
  std::printf("wrote %s\n", path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    const Flags f = parse_flags(world, argc, argv);
    const gpt2::Config& model = f.model;
    const double link_bps = nominal_link_bps(world, f);
    const InterNode nodes{node_comm(world).size()};
    require(nodes.ranks_per_node == 4, "zero_vs_3d_cluster needs 4 ranks on each of 2 nodes");
    const int threads = configure_threads(world);
    const Precision precision = trident_precision<float, float>();
    if (world.rank() == 0)
      print_wrapped(
          "zero_vs_3d_cluster: GPT L=%d C=%d H=%d V=%d T=%d, %lld parameters; batch %d; float; "
          "2 nodes x 4 ranks x %d thread(s) on %d cores; link %.3g bit/s each way per node; "
          "load average %.2f\n",
          model.layers, model.hidden, model.heads, model.vocab, model.seq, model.parameter_count(),
          f.batch, threads, cores_available(), link_bps, load_average());
    const std::vector<NamedRun> runs = cluster_runs(model, f.batch);
    for (const NamedRun& run : runs) validate(run.options, world.size());
    if (!f.html.empty()) io::check_writable(world, f.html, "--html");
    // the link as MPI gets it here: below its rate when 8 ranks share 2 cores, since MPICH moves
    // bytes only while a rank is inside an MPI call
    const LinearFit link_fit = measure_link(world, nodes, link_bps / 8);
    if (world.rank() == 0) {
      char latency[96] = "latency not resolved (the fit's intercept is not above 0)";
      if (link_fit.latency > 0)
        std::snprintf(latency, sizeof latency, "%.0f us latency", 1e6 * link_fit.latency);
      print_wrapped(
          "the link measured by MPI, 4 pairs exchanging at once: %.3g bit/s each way, %s\n",
          8 * link_fit.bandwidth, latency);
    }
    double node_flops = 0;
    std::vector<Row> rows =
        predicted_rows(world, runs, precision, nodes, link_fit, link_bps, node_flops);
    if (world.rank() == 0) print_flop_per_byte(node_flops, link_bps);
    measure_rounds(world, runs, TokenSource::synthetic(model.vocab), f.steps, rows);
    if (world.rank() == 0) {
      print_table(rows, link_bps, f.steps);
      print_axis_seconds(rows);
      print_rankings(rows);
      if (!f.html.empty()) write_page(f.html, rows, f.steps);
    }
    return 0;
  });
}
