// trident/costmodel/layout_cli.hpp: the layout flags of a program that trains a GPT-2 model
// (examples/train_gpt, or a host app's own): --layout auto (layout.hpp), --memory-limit,
// --layout-trials, --calibration-cache and --dry-run, and what they do once the command line is
// parsed.
//
//   LayoutFlags lf;  add_layout_options(app, lf);  parse_command_line(...);
//   if (lf.dry_run) print_dry_run(o, run_flags);
//   if (lf.layout == "auto") apply_layout_auto(world, app, o, run_flags, lf, data);
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include "../io/cli.hpp"
#include "../io/train_cli.hpp"
#include "layout.hpp"

namespace trident::costmodel {

struct LayoutFlags {
  std::string layout = "manual";  // or auto
  double memory_limit_mib = 0;    // 0: the node's memory over its ranks
  int trials = 4;
  std::string calibration_cache = default_calibration_cache();  // "none": no file
  bool dry_run = false;
  std::optional<LayoutChoice> choice;  // --layout auto's, once made
};

inline void add_layout_options(cli::App& app, LayoutFlags& f) {
  app.add_option("--layout", f.layout,
                 "manual (the mesh flags) or auto: every valid layout predicted by the cost model "
                 "calibrated here, the best few run, the fastest kept")
      ->check(cli::IsMember({"manual", "auto"}))
      ->capture_default_str();
  app.add_option("--memory-limit", f.memory_limit_mib,
                 "--layout auto: MiB per rank for model states, activations and communication "
                 "buffers (default: the node's memory over its ranks)");
  app.add_option("--layout-trials", f.trials,
                 "--layout auto: the best predicted layouts run for a few steps")
      ->capture_default_str();
  app.add_option("--calibration-cache", f.calibration_cache,
                 "--layout auto: the file its measurements of this machine are kept in and reused "
                 "from, per machine and build (none: measure every time)")
      ->capture_default_str();
  app.add_flag("--dry-run", f.dry_run,
               "print each stage's predicted memory per rank by kind, and do not train");
}

// --dry-run: each pipeline stage's memory per rank by kind as the cost model predicts it
// (trident_memory.hpp, equal to MemoryStats' to the byte), nothing allocated.
inline void print_dry_run(const gpt2::Options& o, const RunFlags& r) {
  const Precision p = r.precision == "bf16" ? trident_precision<float, bf16>()
                      : r.dtype == "double" ? trident_precision<double, double>()
                                            : trident_precision<float, float>();
  const double MiB = 1024.0 * 1024.0;
  std::printf(
      "dry run, %s: memory per rank, MiB, predicted (costmodel/trident_memory.hpp: ZeRO's model "
      "states of the stage's units, the peak of its activations over the schedule; "
      "trident_buffers.hpp: the peak of its communication buffers and temporaries)\n"
      "%5s %10s %10s %10s %12s %10s %10s\n",
      layout_name(o).c_str(), "stage", "params", "grads", "optimizer", "activations", "buffers",
      "total");
  for (int s = 0; s < o.mesh.pp; ++s) {
    const ModelStateBytes m = stage_model_states(o, s, p);
    const double a = stage_activation_bytes(o, s, p), b = stage_buffer_bytes(o, s, p);
    std::printf("%5d %10.3f %10.3f %10.3f %12.3f %10.3f %10.3f\n", s, m.params / MiB, m.grads / MiB,
                m.optimizer / MiB, a / MiB, b / MiB, (m.total() + a + b) / MiB);
  }
}

// --layout auto: the layout choose_layout picks replaces o's mesh and its policies, which the
// command line must then leave out; the table of the layouts tried on rank 0. Collective.
inline void apply_layout_auto(const Comm& world, const cli::App& app, gpt2::Options& o,
                              const RunFlags& run, LayoutFlags& f, const TokenSource& data) {
  for (const char* flag : {"--tp", "--cp", "--pp", "--dp", "--zero", "--schedule", "--microbatches",
                           "--virtual-stages", "--sequence-parallel", "--recompute", "--pp-layers"})
    require(app.count(flag) == 0, std::string("--layout auto chooses ") + flag +
                                      " itself: leave it out, or use --layout manual");
  require(run.device == "cpu" && run.dtype == "float",
          "--layout auto calibrates float kernels on the CPU: --device cpu --dtype float (with "
          "--precision fp32 or bf16)");
  require(f.memory_limit_mib >= 0 && f.trials >= 1,
          "--memory-limit must be at least 0 and --layout-trials at least 1");
  LayoutSearch s;
  s.memory_limit =
      f.memory_limit_mib > 0 ? f.memory_limit_mib * 1024 * 1024 : node_memory_per_rank(world);
  s.trials = f.trials;
  s.calibration_cache = f.calibration_cache == "none" ? "" : f.calibration_cache;
  f.choice = run.precision == "bf16" ? choose_layout<float, bf16>(world, o, data, s)
                                     : choose_layout<float, float>(world, o, data, s);
  if (world.rank() == 0) print_layout_choice(*f.choice, world.size());
  const gpt2::Options& chosen = f.choice->chosen();
  o.mesh = chosen.mesh;
  o.zero.stage = chosen.zero.stage;
  o.schedule = chosen.schedule;
  o.microbatches = chosen.microbatches;
  o.virtual_stages = chosen.virtual_stages;
  o.sequence_parallel = chosen.sequence_parallel;
  o.recompute = chosen.recompute;
  o.pp_layers = chosen.pp_layers;
}

}  // namespace trident::costmodel
