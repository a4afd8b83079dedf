// examples/pipeline_schedule: a pipeline schedule as data, simulated and drawn.
//
//   ./pipeline_schedule --schedule 1f1b --stages 4 --microbatches 8 --svg 1f1b.svg --trace
//   1f1b.json
//   ./pipeline_schedule --schedule interleaved --stages 4 --microbatches 8 --chunks 2
//   ./pipeline_schedule --schedule zb-h1 --stages 4 --microbatches 8 --backward-cost 2 --svg zb.svg
//   ./pipeline_schedule --schedule zbv --stages 4 --microbatches 8 --backward-cost 2 --svg zbv.svg
//   ./pipeline_schedule --schedule zb-h1 --stages 2 --microbatches 8 --backward-cost 2
//   --stage-scale 1,1.04
//
// Prints each stage's actions (F3 / B3: forward / backward of microbatch 3; F3c1: its chunk 1;
// zb-h1 and zbv: B3 the input gradient, W3 the weight gradient, drawn in their own greyer shade;
// zbv's chunk 0 goes down the stages and its chunk 1 (F3c1, hatched) comes back up;
// with --verbose also the receives and sends: rF3<1 receives F3's input from stage 1), the
// simulated bubble next to the papers' formula, and the activations each stage holds at most.
// --stage-scale makes the stages unequal (each stage's F, B and W times a factor, as an LM head
// makes the last stage heavier): the bubble then, next to equal stages' and to 1F1B's on the
// same stages, shows how much of a zero-bubble schedule's gain unequal stages take back.
// --svg draws the timeline as in the GPipe and Megatron-LM figures; --trace writes a Chrome trace
// for Perfetto or chrome://tracing. Needs no MPI beyond start-up; rank 0 does the printing.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <trident/io/chrome_trace.hpp>
#include <trident/io/cli.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/plan/formulas.hpp>
#include <trident/pp/simulate.hpp>
#include <trident/pp/svg.hpp>
#include <trident/trident.hpp>
#include <vector>

using namespace trident;

namespace {

struct Flags {
  std::string schedule = "1f1b", svg, trace;
  std::vector<std::string> stage_scale;  // one factor per stage, or none (equal stages)
  pp::ScheduleSpec spec{pp::ScheduleKind::one_f_one_b, 4, 8, 1};
  pp::Costs costs;
  bool verbose = false;
  cli::Option* chunks = nullptr;
};

void add_flags(cli::App& app, Flags& f) {
  app.add_option("--schedule", f.schedule, "gpipe, 1f1b, interleaved, zb-h1 or zbv")
      ->capture_default_str();
  app.add_option("--stages", f.spec.stages, "pipeline stages p")->capture_default_str();
  app.add_option("--microbatches", f.spec.microbatches, "microbatches m")->capture_default_str();
  f.chunks = app.add_option("--chunks", f.spec.chunks,
                            "model chunks per stage v (interleaved: 2; zbv: 2, in a V)");
  app.add_option("--forward-cost", f.costs.forward, "one microbatch through a stage, forward")
      ->capture_default_str();
  app.add_option("--backward-cost", f.costs.backward, "the same, backward (B + W)")
      ->capture_default_str();
  app.add_option("--weight-fraction", f.costs.weight_fraction,
                 "zb-h1, zbv: the share of the backward that is W (weight gradients)")
      ->check(cli::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--p2p-cost", f.costs.p2p, "time a message is in transit")->capture_default_str();
  app.add_option("--stage-scale", f.stage_scale,
                 "unequal stages: one factor per stage for its F, B and W, e.g. 1,1.04")
      ->delimiter(',');
  app.add_option("--svg", f.svg, "write the timeline as SVG");
  app.add_option("--trace", f.trace, "write the timeline as a Chrome trace (JSON)");
  app.add_flag("--verbose", f.verbose, "also print each stage's receives and sends");
}

// The header line and each stage's actions (compute only, or all with --verbose).
void print_actions(const Flags& f, const std::vector<std::vector<pp::Action>>& schedule) {
  const pp::ScheduleSpec& spec = f.spec;
  const pp::Costs& costs = f.costs;
  std::printf(
      "%s: %d stages, %d microbatches, %d chunk(s) per stage; costs: forward %g, "
      "backward %g, p2p %g",
      pp::to_string(spec.kind), spec.stages, spec.microbatches, spec.chunks, costs.forward,
      costs.backward, costs.p2p);
  if (pp::traits(spec.kind).splits_backward)
    std::printf(" (B %g + W %g)", costs.backward * (1 - costs.weight_fraction),
                costs.backward * costs.weight_fraction);
  std::printf("\n");
  for (int s = 0; s < spec.stages; ++s) {
    std::string line;
    for (const pp::Action& a : schedule[s])
      if (f.verbose || pp::is_compute(a.op)) line += " " + pp::to_string(a);
    std::printf("stage %d:%s\n", s, line.c_str());
  }
}

// ZB-V's bubble time next to its floor (p-1) F/2 (the first microbatch going down the V), the
// paper's figure (0 for equal F, B, W) and ZB-H1's and 1F1B's formulas.
void print_zbv_bubble(const Flags& f, const pp::Simulation& sim) {
  const int p = f.spec.stages, m = f.spec.microbatches;
  const pp::Costs& c = f.costs;
  const double B = c.backward * (1 - c.weight_fraction), W = c.backward * c.weight_fraction;
  const double idle = sim.makespan - m * (c.forward + c.backward);
  std::printf(
      "bubble time: simulated %g; floor (p-1) F/2 = %g (the last stage waits for microbatch 0 to "
      "go down p-1 half-stage chunks); Qi et al. 2024: 0 for equal F, B, W; ZB-H1: (p-1)(F + B "
      "- W) = %g; 1F1B: (p-1)(F + B + W) = %g\n",
      idle, (p - 1) * c.forward / 2, (p - 1) * (c.forward + B - W), (p - 1) * (c.forward + B + W));
  std::printf("bubble fraction, idle / (p * makespan): simulated %.4f", sim.bubble_share);
  if (c.forward == B && B == W && c.p2p == 0)
    std::printf(", idle/(3m+idle) with idle = max((p-1)/2, 2p-1-m) F = %.4f",
                pp::zbv_bubble_share(p, m));
  std::printf("\n");
}

// The simulated makespan and bubble next to the papers' formulas.
void print_bubble(const Flags& f, const pp::Simulation& sim) {
  const int p = f.spec.stages, m = f.spec.microbatches, v = f.spec.chunks;
  const pp::Costs& costs = f.costs;
  const double ideal = m * (costs.forward + costs.backward);
  std::printf("makespan %g (ideal, without bubble: m (f + b) = %g)\n", sim.makespan, ideal);
  if (f.spec.kind == pp::ScheduleKind::zb_h1) {
    const double B = costs.backward * (1 - costs.weight_fraction),
                 W = costs.backward * costs.weight_fraction;
    std::printf(
        "bubble time: simulated %g, (p-1)(F + B - W) = %g (Qi et al. 2023 §3.1; 1F1B: "
        "(p-1)(F + B + W) = %g)\n",
        sim.makespan - ideal, (p - 1) * (costs.forward + B - W), (p - 1) * (costs.forward + B + W));
    std::printf("bubble fraction, idle / (p * makespan): simulated %.4f\n", sim.bubble_share);
  } else if (f.spec.kind == pp::ScheduleKind::zbv) {
    print_zbv_bubble(f, sim);
  } else {
    std::printf(
        "bubble fraction, idle / (p * makespan): simulated %.4f, (p-1)/(v m + p-1) = "
        "%.4f\n",
        sim.bubble_share, pp::bubble_share(p, m, v));
    std::printf("bubble time / ideal time:              simulated %.4f, (p-1)/(v m) = %.4f%s\n",
                (sim.makespan - ideal) / ideal, pp::bubble_over_ideal(p, m, v),
                costs.p2p > 0 ? "  (the formulas assume p2p = 0)" : "");
  }
}

// The activations each stage holds at most (and, for zb-h1, until B).
void print_peaks(const Flags& f, const pp::Simulation& sim) {
  std::printf("peak in-flight microbatch-chunks (activations held) per stage:");
  for (int n : sim.peak_in_flight) std::printf(" %d", n);
  if (pp::traits(f.spec.kind).splits_backward) {
    std::printf("\n  of which until B:");
    for (int n : sim.peak_before_input_gradient) std::printf(" %d", n);
    std::printf("; after B only what W reads is held");
  }
  if (f.spec.chunks > 1) {  // a chunk holds 1/v of a stage's layers
    std::printf("\n  in whole-stage microbatches (/ v = %d):", f.spec.chunks);
    for (int n : sim.peak_in_flight) std::printf(" %g", double(n) / f.spec.chunks);
    std::printf("; 1F1B's peak: min(m, p) = %d", std::min(f.spec.microbatches, f.spec.stages));
  }
  std::printf("\n");
}

// --stage-scale: each stage's pass times, its factor times the costs' (the same on every rank,
// errors included).
std::vector<pp::PassTimes> scaled_stages(const Flags& f) {
  require(static_cast<int>(f.stage_scale.size()) == f.spec.stages,
          "--stage-scale needs one factor per stage: got " + std::to_string(f.stage_scale.size()) +
              " for " + std::to_string(f.spec.stages) + " stages");
  std::vector<pp::PassTimes> stages;
  for (const std::string& text : f.stage_scale) {
    std::size_t used = 0;
    double k = 0;
    try {
      k = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    require(
        used == text.size() && std::isfinite(k) && k > 0,
        "--stage-scale: expected a positive factor per stage such as 1,1.04, got '" + text + "'");
    stages.push_back(f.costs.pass_times().scaled(k));
  }
  return stages;
}

// Unequal stages: this schedule's bubble next to its own on equal stages and to 1F1B's on both.
// `costs`: the unequal stages' (scaled_stages).
void print_unequal(const Flags& f, const pp::Costs& costs, const pp::Simulation& sim,
                   const pp::Simulation& equal) {
  const int p = f.spec.stages, m = f.spec.microbatches;
  const auto one_f_one_b = pp::make_schedule({pp::ScheduleKind::one_f_one_b, p, m, 1});
  const double one = pp::simulate(one_f_one_b, costs).bubble_share;
  const double one_equal = pp::simulate(one_f_one_b, f.costs).bubble_share;
  std::printf("with --stage-scale (stages unequal), bubble fraction: simulated %.4f (equal: %.4f)",
              sim.bubble_share, equal.bubble_share);
  if (f.spec.kind != pp::ScheduleKind::one_f_one_b)
    std::printf("; 1F1B on the same stages %.4f (equal: %.4f); %s / 1F1B %.3f (equal: %.3f)", one,
                one_equal, pp::to_string(f.spec.kind), sim.bubble_share / one,
                equal.bubble_share / one_equal);
  std::printf("\n");
}

// --svg and --trace, written by rank 0; a file that cannot be written is the same error on
// every rank.
void write_files(const Comm& world, const Flags& f, const pp::Simulation& sim) {
  const int p = f.spec.stages, m = f.spec.microbatches, v = f.spec.chunks;
  std::string error;
  if (world.rank() == 0) {
    try {
      const std::string title = std::string(pp::to_string(f.spec.kind)) +
                                ": p = " + std::to_string(p) + ", m = " + std::to_string(m) +
                                (v > 1 ? ", v = " + std::to_string(v) : "");
      pp::SvgOptions svg;  // simulated: stages, time in the costs' units
      char unit[64];
      std::snprintf(unit, sizeof unit, "in the costs' units (forward %g)", f.costs.forward);
      svg.time_unit = unit;
      svg.caption = "simulated (pp/simulate.hpp): every pass takes exactly its cost";
      svg.in_flight = true;  // GPipe holds m microbatches, 1F1B at most p - s: the memory side
      if (!f.svg.empty()) pp::write_timeline_svg(f.svg, sim.timeline, title, svg);
      if (!f.trace.empty()) io::write_chrome_trace(f.trace, sim.timeline);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  agree(world, error.empty(), error);
  if (world.rank() == 0 && !f.svg.empty()) std::printf("wrote %s\n", f.svg.c_str());
  if (world.rank() == 0 && !f.trace.empty()) std::printf("wrote %s\n", f.trace.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    Flags f;
    cli::App app{"Generate a pipeline schedule, simulate it, and draw its timeline."};
    add_flags(app, f);
    parse_command_line(app, argc, argv, world);

    f.spec.kind = pp::parse_schedule(f.schedule);
    if (f.chunks->count() == 0) f.spec.chunks = pp::traits(f.spec.kind).min_chunks;
    const auto schedule = pp::make_schedule(f.spec);
    const pp::ChunkPlacement placement = pp::chunk_map(f.spec).placement;
    const pp::Simulation equal = pp::simulate(schedule, f.costs, placement);
    require(!equal.deadlock, equal.deadlock_reason);
    pp::Costs costs = f.costs;  // what the timeline shows: the stages as given
    if (!f.stage_scale.empty()) costs.stage = scaled_stages(f);
    const pp::Simulation sim = pp::simulate(schedule, costs, placement);
    if (world.rank() == 0) {
      print_actions(f, schedule);
      if (!f.stage_scale.empty())
        std::printf("on equal stages (as the papers' formulas assume):\n");
      print_bubble(f, equal);
      print_peaks(f, equal);
      if (!f.stage_scale.empty()) print_unequal(f, costs, sim, equal);
    }
    write_files(world, f, sim);
    return 0;
  });
}
