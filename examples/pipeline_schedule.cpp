// examples/pipeline_schedule: a pipeline schedule as data, simulated and drawn.
//
//   ./pipeline_schedule --schedule 1f1b --stages 4 --microbatches 8 --svg 1f1b.svg --trace
//   1f1b.json
//   ./pipeline_schedule --schedule interleaved --stages 4 --microbatches 8 --chunks 2
//   ./pipeline_schedule --schedule zb-h1 --stages 4 --microbatches 8 --backward-cost 2 --svg zb.svg
//
// Prints each stage's actions (F3 / B3: forward / backward of microbatch 3; F3c1: its chunk 1;
// zb-h1: B3 the input gradient, W3 the weight gradient, drawn in their own greyer shade;
// with --verbose also the receives and sends: rF3<1 receives F3's input from stage 1), the
// simulated bubble next to the papers' formula, and the activations each stage holds at most.
// --svg draws the timeline as in the GPipe and Megatron-LM figures; --trace writes a Chrome trace
// for Perfetto or chrome://tracing. Needs no MPI beyond start-up; rank 0 does the printing.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <trident/io/chrome_trace.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/plan/formulas.hpp>
#include <trident/pp/simulate.hpp>
#include <trident/pp/svg.hpp>
#include <trident/trident.hpp>

using namespace trident;

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    std::string schedule_name = "1f1b", svg_path, trace_path;
    pp::ScheduleSpec spec{pp::ScheduleKind::one_f_one_b, 4, 8, 1};
    pp::Costs costs;
    bool verbose = false;
    CLI::App app{"Generate a pipeline schedule, simulate it, and draw its timeline."};
    app.add_option("--schedule", schedule_name, "gpipe, 1f1b, interleaved or zb-h1")
        ->capture_default_str();
    app.add_option("--stages", spec.stages, "pipeline stages p")->capture_default_str();
    app.add_option("--microbatches", spec.microbatches, "microbatches m")->capture_default_str();
    CLI::Option* chunks =
        app.add_option("--chunks", spec.chunks, "model chunks per stage v (interleaved: 2)");
    app.add_option("--forward-cost", costs.forward, "one microbatch through a stage, forward")
        ->capture_default_str();
    app.add_option("--backward-cost", costs.backward, "the same, backward (B + W)")
        ->capture_default_str();
    app.add_option("--weight-fraction", costs.weight_fraction,
                   "zb-h1: the share of the backward that is W (weight gradients)")
        ->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();
    app.add_option("--p2p-cost", costs.p2p, "time a message is in transit")->capture_default_str();
    app.add_option("--svg", svg_path, "write the timeline as SVG");
    app.add_option("--trace", trace_path, "write the timeline as a Chrome trace (JSON)");
    app.add_flag("--verbose", verbose, "also print each stage's receives and sends");
    parse_command_line(app, argc, argv, world);

    spec.kind = pp::parse_schedule(schedule_name);
    if (spec.kind == pp::ScheduleKind::interleaved && chunks->count() == 0) spec.chunks = 2;
    const auto schedule = pp::make_schedule(spec);
    const pp::Simulation sim = pp::simulate(schedule, costs);
    require(!sim.deadlock, sim.deadlock_reason);

    const int p = spec.stages, m = spec.microbatches, v = spec.chunks;
    if (world.rank() == 0) {
      std::printf(
          "%s: %d stages, %d microbatches, %d chunk(s) per stage; costs: forward %g, "
          "backward %g, p2p %g",
          pp::to_string(spec.kind), p, m, v, costs.forward, costs.backward, costs.p2p);
      if (spec.kind == pp::ScheduleKind::zb_h1)
        std::printf(" (B %g + W %g)", costs.backward * (1 - costs.weight_fraction),
                    costs.backward * costs.weight_fraction);
      std::printf("\n");
      for (int s = 0; s < p; ++s) {
        std::string line;
        for (const pp::Action& a : schedule[s])
          if (verbose || pp::is_compute(a.op)) line += " " + pp::to_string(a);
        std::printf("stage %d:%s\n", s, line.c_str());
      }
      const double ideal = m * (costs.forward + costs.backward);
      std::printf("makespan %g (ideal, without bubble: m (f + b) = %g)\n", sim.makespan, ideal);
      if (spec.kind == pp::ScheduleKind::zb_h1) {
        const double B = costs.backward * (1 - costs.weight_fraction),
                     W = costs.backward * costs.weight_fraction;
        std::printf(
            "bubble time: simulated %g, (p-1)(F + B - W) = %g (Qi et al. 2023 §3.1; 1F1B: "
            "(p-1)(F + B + W) = %g)\n",
            sim.makespan - ideal, (p - 1) * (costs.forward + B - W),
            (p - 1) * (costs.forward + B + W));
        std::printf("bubble fraction, idle / (p * makespan): simulated %.4f\n",
                    sim.bubble_fraction);
      } else {
        std::printf(
            "bubble fraction, idle / (p * makespan): simulated %.4f, (p-1)/(v m + p-1) = "
            "%.4f\n",
            sim.bubble_fraction, plan::bubble_share(p, m, v));
        std::printf("bubble time / ideal time:              simulated %.4f, (p-1)/(v m) = %.4f%s\n",
                    (sim.makespan - ideal) / ideal, plan::bubble_fraction(p, m, v),
                    costs.p2p > 0 ? "  (the formulas assume p2p = 0)" : "");
      }
      std::printf("peak in-flight microbatch-chunks (activations held) per stage:");
      for (int n : sim.peak_in_flight) std::printf(" %d", n);
      if (spec.kind == pp::ScheduleKind::zb_h1) {
        std::printf("\n  of which until B (1F1B's):");
        for (int n : sim.peak_before_input_gradient) std::printf(" %d", n);
        std::printf("; after B only what W reads is held");
      }
      std::printf("\n");
    }

    std::string error;  // a file that cannot be written is the same error on every rank
    if (world.rank() == 0) {
      try {
        const std::string title = std::string(pp::to_string(spec.kind)) +
                                  ": p = " + std::to_string(p) + ", m = " + std::to_string(m) +
                                  (v > 1 ? ", v = " + std::to_string(v) : "");
        if (!svg_path.empty()) pp::write_timeline_svg(svg_path, sim.timeline, title);
        if (!trace_path.empty()) pp::write_chrome_trace(trace_path, sim.timeline);
      } catch (const Error& e) {
        error = e.what();
      }
    }
    agree(world, error.empty(), error);
    if (world.rank() == 0 && !svg_path.empty()) std::printf("wrote %s\n", svg_path.c_str());
    if (world.rank() == 0 && !trace_path.empty()) std::printf("wrote %s\n", trace_path.c_str());
    return 0;
  });
}
