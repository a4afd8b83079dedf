// examples/zero_vs_3d: with ZeRO, why do we still need 3D parallelism?
//
//   mpiexec -n 8 ./zero_vs_3d [--steps 3] [--svg-dir .] [--html zero_vs_3d.html]
//
// One GPT on 8 ranks, five ways: pure ZeRO-3 over DP = 8, and TP2-PP2-DP2 (1F1B), TP2-DP4,
// PP2-DP4, TP4-DP2 with ZeRO-1. Each is run and measured (MemoryStats, CommStats, the step's
// clock) and predicted by the cost model calibrated on this machine (costmodel/calibrate.hpp,
// costmodel/predict.hpp), side by side: memory per rank, bytes per step per axis, step time and
// bubble. Then the same formulas for GPT-3 175B on 1024 A100s, 8 per node. One SVG bar chart of
// memory per rank by kind per configuration, and one of all five, go to --svg-dir.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <trident/costmodel/measured.hpp>
#include <trident/costmodel/predict.hpp>
#include <trident/io/bar_chart_svg.hpp>
#include <trident/io/cli.hpp>
#include <trident/io/html_report.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/trident.hpp>

#include "comparison.hpp"
#include "gpt3_175b.hpp"
#include "memory_chart.hpp"
#include "the_answer.hpp"

using namespace trident;
using namespace trident::costmodel;
using namespace trident::examples;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

struct Result {
  NamedRun run;
  Prediction predicted;
  MeasuredRun measured;
};

// The largest figure over the ranks of pipeline stage s.
template <class F>
double stage_max(const Result& r, int s, F&& f) {
  double most = 0;
  for (const RankFigures& k : r.measured.report.ranks)
    if (int(k.pp) == s) most = std::max(most, f(k));
  return most;
}

void print_memory(const std::vector<Result>& results) {
  print_wrapped(
      "\nmemory per rank, MiB: measured (MemoryStats) / predicted. Model states: ZeRO §5.1, "
      "(2+2+K) Psi with Psi the stage's units padded to DP; activations: trident's buffers "
      "(models/gpt2/block.hpp) over the stage's schedule, peak\n");
  std::printf("%-20s %5s %9s %9s %9s %21s %21s %9s\n", "run", "stage", "params", "grads",
              "optimizer", "model states", "activations", "comm bufs");
  for (const Result& r : results)
    for (int s = 0; s < r.run.options.mesh.pp; ++s) {
      const StagePrediction& p = r.predicted.stages[s];
      auto m = [&](auto f) { return stage_max(r, s, f) / kMiB; };
      const double states =
          m([](const RankFigures& k) { return k.parameters + k.gradients + k.optimizer; });
      std::printf("%-20s %5d %9.3f %9.3f %9.3f %10.3f / %-8.3f %10.3f / %-8.3f %9.3f\n",
                  s == 0 ? r.run.name.c_str() : "", s,
                  m([](const RankFigures& k) { return k.parameters; }),
                  m([](const RankFigures& k) { return k.gradients; }),
                  m([](const RankFigures& k) { return k.optimizer; }), states,
                  p.states.total() / kMiB, m([](const RankFigures& k) { return k.activations; }),
                  p.activations / kMiB, m([](const RankFigures& k) { return k.buffers; }));
    }
}

void print_traffic(const std::vector<Result>& results) {
  print_wrapped(
      "\nbytes sent per step per rank, MiB: measured (CommStats) / predicted. TP: Megatron-LM §3, "
      "4 all-reduces of b*s*h per layer per microbatch; PP: Narayanan et al. 2021 §4.1, b*s*h "
      "per boundary each way; DP: ZeRO §7.2 (ZeRO-1: reduce-scatter + all-gather of Psi; "
      "ZeRO-3: + Psi gathered before each forward and backward, per microbatch)\n");
  std::printf("%-20s %5s %21s %21s %21s %21s\n", "run", "stage", "TP", "PP", "DP",
              "tied embedding");
  for (const Result& r : results)
    for (int s = 0; s < r.run.options.mesh.pp; ++s) {
      const AxisFigures& p = r.predicted.stages[s].bytes;
      auto m = [&](double Traffic::*axis) {
        return stage_max(r, s, [&](const RankFigures& k) { return k.traffic.*axis; }) / kMiB;
      };
      std::printf("%-20s %5d %10.3f / %-8.3f %10.3f / %-8.3f %10.3f / %-8.3f %10.3f / %-8.3f\n",
                  s == 0 ? r.run.name.c_str() : "", s, m(&Traffic::tp), p.tp / kMiB,
                  m(&Traffic::pp), p.pp / kMiB, m(&Traffic::dp), p.dp / kMiB, m(&Traffic::emb),
                  p.emb / kMiB);
    }
}

void print_time(const std::vector<Result>& results, int steps) {
  print_wrapped(
      "\nstep time, s: measured (mean of %d steps, slowest rank) / cost model (nothing "
      "overlaps; calibrated on this machine, all ranks at once); bubble: measured (idle share of "
      "the pipeline's ranks) / (p-1)/(m+p-1) (Huang et al. 2019)\n",
      steps);
  std::printf("%-20s %10s %10s %6s %8s %8s | predicted: %7s %6s %6s %6s %6s\n", "run", "measured",
              "predicted", "ratio", "bubble", "formula", "compute", "TP", "PP", "DP", "after");
  for (const Result& r : results) {
    const StagePrediction* slow = &r.predicted.stages.front();
    for (const StagePrediction& s : r.predicted.stages)
      if (s.microbatch_s > slow->microbatch_s) slow = &s;
    std::printf("%-20s %10.3f %10.3f %6.2f %8.3f %8.3f | %18.3f %6.3f %6.3f %6.3f %6.3f\n",
                r.run.name.c_str(), r.measured.step_s, r.predicted.step_s,
                r.predicted.step_s / r.measured.step_s, r.measured.report.bubble,
                r.predicted.bubble_formula, slow->compute_s, slow->seconds.tp, slow->seconds.pp,
                slow->seconds.dp, r.predicted.after_s);
  }
}

// What the 8-rank numbers mean, from the numbers.
void explain(const std::vector<Result>& results) {
  auto most = [](const Result& r, auto f) {
    double x = 0;
    for (const StagePrediction& s : r.predicted.stages) x = std::max(x, f(s));
    return x / kMiB;
  };
  auto states = [](const StagePrediction& s) { return s.states.total(); };
  auto activations = [](const StagePrediction& s) { return s.activations; };
  auto sent = [](const StagePrediction& s) { return s.bytes.total(); };
  const Result &z3 = results.front(), &d3 = results[1];
  const char* name = d3.run.name.c_str();
  print_wrapped(
      "\nZeRO-3 holds the least model state per rank (%.1f MiB, against %.1f for %s): ZeRO takes "
      "away the copies of the model states that plain DP keeps, but not activations, %.1f MiB per "
      "rank against %.1f, since each ZeRO-3 rank runs whole layers on its own sequences. It also "
      "sends %.1f MiB per rank per step, %.1fx the %.1f of %s, all over DP, the axis that crosses "
      "nodes on a cluster; on this one machine every byte moves through shared memory, so the step "
      "times above differ by compute and waiting, and below is what the bytes cost across nodes.\n",
      most(z3, states), most(d3, states), name, most(z3, activations), most(d3, activations),
      most(z3, sent), most(z3, sent) / most(d3, sent), most(d3, sent), name);
}

// This machine's scale of the answer (examples/the_answer.hpp): ZeRO-3 and the fastest measured
// 3D layout.
AnswerScale toy_scale(const std::vector<Result>& results, int batch) {
  AnswerScale a = answer_scale("this machine, 8 ranks", "1 node", "measured", kMiB, "MiB", batch);
  for (const Result& r : results) {
    AnswerRow row{r.run.name};
    for (const RankFigures& f : r.measured.report.ranks) {
      row.states = std::max(row.states, f.parameters + f.gradients + f.optimizer);
      row.activations = std::max(row.activations, f.activations);
      row.sent = std::max(row.sent, f.traffic.tp + f.traffic.pp + f.traffic.dp + f.traffic.emb);
    }
    for (const StagePrediction& s : r.predicted.stages) row.flops = std::max(row.flops, s.flops);
    wire_by_axis(row, r.run.options, r.measured.report.ranks, r.measured.report.precision,
                 InterNode{8});
    row.across = -1;
    row.step_s = r.measured.step_s;
    const MeshShape& m = r.run.options.mesh;
    if (r.run.options.zero.stage == 3)
      a.zero3 = row;
    else if (a.best.run.empty() || row.step_s < a.best.step_s) {
      a.best = row;
      a.model_parallel = m.tp * m.pp;
    }
  }
  return a;
}

// Writes the memory charts into `dir`; returns them (the all-runs chart first).
std::vector<std::string> write_charts(const std::vector<Result>& results, const std::string& dir) {
  std::vector<std::string> svgs(1);
  std::vector<const RankFigures*> most;
  std::vector<std::string> names, where;
  std::vector<double> most_predicted;
  for (const Result& r : results) {
    std::vector<const RankFigures*> ranks;
    std::vector<std::string> labels;
    std::vector<double> predicted;
    const RankFigures* top = nullptr;
    std::size_t top_rank = 0;
    for (std::size_t k = 0; k < r.measured.report.ranks.size(); ++k) {
      const RankFigures& f = r.measured.report.ranks[k];
      const StagePrediction& p = r.predicted.stages[int(f.pp)];
      ranks.push_back(&f);
      labels.push_back("rank " + std::to_string(k));
      predicted.push_back(p.states.total() + p.activations);
      auto total = [](const RankFigures& x) {
        return x.parameters + x.gradients + x.optimizer + x.activations + x.buffers;
      };
      if (!top || total(f) > total(*top)) {
        top = &f;
        top_rank = k;
      }
    }
    std::string slug;
    for (char ch : r.run.name)
      slug += std::isalnum(static_cast<unsigned char>(ch)) ? char(std::tolower(ch)) : '_';
    const std::string path = dir + "/zero_vs_3d_" + slug + ".svg";
    io::BarChart chart =
        memory_chart(r.run.name + ": memory per rank (tp,pp,dp)", ranks, labels, predicted);
    chart.notes = memory_notes(chart);
    io::write_bar_chart_svg(path, chart);
    svgs.push_back(io::bar_chart_svg(chart));
    std::printf("wrote %s\n", path.c_str());
    most.push_back(top);
    names.push_back(r.run.name);
    where.push_back("rank " + std::to_string(top_rank));
    const StagePrediction& p = r.predicted.stages[int(top->pp)];
    most_predicted.push_back(p.states.total() + p.activations);
  }
  const std::string path = dir + "/zero_vs_3d_all.svg";
  io::BarChart all =
      memory_chart("The most loaded rank of each configuration, MiB", most, names, most_predicted);
  all.sublabels = where;
  all.notes = memory_notes(all);
  io::write_bar_chart_svg(path, all);
  svgs.front() = io::bar_chart_svg(all);
  std::printf("wrote %s, noting under its legend:\n", path.c_str());
  for (const std::string& note : all.notes) print_wrapped("  %s\n", note.c_str());
  return svgs;
}

// --html: the comparison as one page (io/html_report.hpp): step time measured next to the cost
// model, the memory charts, the bytes on the wire; the figures also as the page's JSON.
void write_page(const std::string& path, const std::vector<Result>& results,
                const std::vector<std::string>& memory, const std::vector<AnswerScale>& scales) {
  io::BarChart time;
  time.title = "Step time: measured, and the cost model's prediction";
  time.unit = "s";
  time.marker_name = "predicted (costmodel/predict.hpp)";
  time.series.push_back({"measured", io::kind_colour(0), {}});
  nlohmann::json data;
  for (const Result& r : results) {
    time.labels.push_back(r.run.name);
    time.series[0].values.push_back(r.measured.step_s);
    time.markers.push_back(r.predicted.step_s);
    data["runs"].push_back({{"name", r.run.name},
                            {"measured_step_s", r.measured.step_s},
                            {"predicted_step_s", r.predicted.step_s},
                            {"bubble", r.measured.report.bubble}});
  }
  std::string body = "<h1>ZeRO-3 next to 3D parallelism, 8 ranks</h1><h2>Step time</h2>" +
                     io::bar_chart_svg(time) + "<h2>Memory per rank</h2>";
  for (const std::string& svg : memory) body += svg;
  body += "<h2>Bytes on the wire</h2>" + io::bar_chart_svg(answer_traffic_chart(scales));
  io::write_text(path, io::html_page("zero_vs_3d", body, data));
  std::printf("wrote %s\n", path.c_str());
}

// Each run calibrated (keeping the calls of the runs before), predicted and measured.
std::vector<Result> calibrate_and_measure(const Comm& world, const std::vector<NamedRun>& runs,
                                          const Precision& precision, const TokenSource& data,
                                          int steps) {
  std::vector<Result> results;
  Calibration cal;
  for (const NamedRun& run : runs) {
    cal = calibrate_run(world, run.options, precision, &cal);
    Result r{run, predict(run.options, precision, measured_machine(cal)),
             measure_run<float, float>(world, run.options, data, steps)};
    if (world.rank() == 0)
      std::printf(
          "  %-20s calibrated: sgemm %.1f GFLOP/s a rank, %.1f ms between calls; measured "
          "%.2f s a step\n",
          run.name.c_str(), cal.gemm_flops / 1e9, cal.gap_s * 1e3, r.measured.step_s);
    std::fflush(stdout);
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    gpt2::Config model = comparison_model();
    int batch = kComparisonBatch, steps = 3;
    std::string svg_dir = ".", html;
    cli::App app{"ZeRO-3 next to 3D parallelism on one model and 8 ranks: measured and predicted."};
    add_model_options(app, model);
    app.add_option("--batch", batch, "sequences per step (global batch)")->capture_default_str();
    app.add_option("--steps", steps, "measured steps per configuration (after one warm-up)")
        ->capture_default_str();
    app.add_option("--svg-dir", svg_dir, "folder for the memory bar charts")->capture_default_str();
    app.add_option("--html", html, "write the comparison as one self-contained web page");
    parse_command_line(app, argc, argv, world);
    require(world.size() == 8,
            "zero_vs_3d compares five 8-rank configurations: run it with "
            "mpiexec -n 8 (got " +
                std::to_string(world.size()) + " ranks)");
    require(steps >= 1, "--steps must be at least 1");
    const int threads = configure_threads(world);
    const Precision precision = trident_precision<float, float>();
    if (world.rank() == 0)
      print_wrapped(
          "zero_vs_3d: GPT L=%d C=%d H=%d V=%d T=%d, %lld parameters; batch %d x %d "
          "tokens; float, %g+%g+%g bytes per parameter; %d ranks x %d thread(s) on %d "
          "cores\n",
          model.layers, model.hidden, model.heads, model.vocab, model.seq, model.parameter_count(),
          batch, model.seq, precision.param_bytes, precision.grad_bytes, precision.optimizer_bytes,
          world.size(), threads, cores_available());
    const std::vector<NamedRun> runs = comparison_runs(model, batch);
    for (const NamedRun& run : runs) validate(run.options, world.size());  // before any run
    const std::string probe = svg_dir + "/zero_vs_3d_all.svg";
    agree(world, world.rank() != 0 || static_cast<bool>(std::ofstream(probe)),
          "cannot write the bar charts into --svg-dir '" + svg_dir + "'");
    if (!html.empty()) io::check_writable(world, html, "--html");
    const std::vector<Result> results =
        calibrate_and_measure(world, runs, precision, TokenSource::synthetic(model.vocab), steps);
    const AnswerScale cluster = cluster_scale(world, precision);  // calibrated on all ranks
    if (world.rank() != 0) return 0;
    print_memory(results);
    print_traffic(results);
    print_time(results, steps);
    explain(results);
    print_gpt3();
    const std::vector<std::string> memory = write_charts(results, svg_dir);
    const std::vector<AnswerScale> scales = {toy_scale(results, batch), cluster, gpt3_scale()};
    print_answer(scales);
    write_answer_chart(scales, svg_dir + "/zero_vs_3d_traffic.svg");
    if (!html.empty()) write_page(html, results, memory, scales);
    return 0;
  });
}
