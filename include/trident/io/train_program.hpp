// trident/io/train_program.hpp: the training program, generic over the model — train_gpt and
// train_llama are two instances of it, and a host app's model gets the same program in one
// call. Every model so trained has: any mesh, schedule, ZeRO stage, precision and device;
// --init and --save (safetensors in the model's names); checkpoints (--checkpoint-dir,
// --save-every, --keep), --resume on any other mesh and --stop-after; --eval-every (a held-out
// tail) and --sample; --dump-grads; --trace and --svg (the last step's timeline); --json;
// --metrics (a JSON line per step, io/metrics_log.hpp); MFU (train/mfu.hpp); --html (the report
// as a web page, io/html_report.hpp);
// --config and --write-config (a TOML file of the flags; --json embeds the effective one); and
// the closing report (train/report.hpp).
//
//   struct MyProgram : trident::ProgramHooks {
//     static constexpr const char* kName = "train_mine";
//     static constexpr const char* kDescription = "Train my model ...";
//     MyConfig config;                                 // the model's shape, its flags' targets
//     MyModel model() const;                           // model/model.hpp
//     unsigned long long& seed();                      // --seed sets it
//     void add_model_options(trident::cli::App&);      // --layers, --hidden, ...
//     std::string shape() const;                       // the header's "L=4 C=128 ..."
//     long long parameter_count() const;
//     nlohmann::json config_json() const;              // --json's "config"
//   };
//   int main(int argc, char** argv) { return trident::train_program(argc, argv, MyProgram{}); }
//
// (CLI11's definitions in one translation unit: io/cli.hpp.) ProgramHooks' members may be
// replaced: more flags, work before the data is read or before training (train_gpt's --dry-run
// and --layout auto), more JSON.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../train/evaluate.hpp"
#include "checkpoint.hpp"
#include "cli.hpp"
#include "device_flag.hpp"
#include "hardware_peak.hpp"
#include "metrics_log.hpp"
#include "train_outputs.hpp"
#include "weights.hpp"

namespace trident {

// What a model's program may add to the generic one; these do nothing.
struct ProgramHooks {
  void add_options(cli::App&) {}
  // Right after parsing, before any flag is checked (e.g. a shape read from a file).
  void after_parse(const cli::App&) {}
  // After the flags are read, before the data: true ends the program (status 0).
  bool before_data(const Comm&, TrainOptions&, const RunFlags&) { return false; }
  // With the data read, before the trainer is built (it may change the options).
  void before_training(const Comm&, cli::App&, TrainOptions&, RunFlags&, const TokenSource&) {}
  void extend_json(nlohmann::json&) const {}
};

namespace program_detail {

// --init, then --resume (a directory with no checkpoint yet is a fresh start: every slice of a
// job cut by a scheduler runs the same command); prints the run's header line.
template <class P, class Tr>
void start(const Comm& world, const P& p, Tr& t, const ProgramFlags& f, const TokenSource& data) {
  warn_if_tp_spans_nodes(t.mesh());
  if (!f.init.empty()) load_weights(t, f.init);
  if (f.resuming) {
    const std::string from = resume_training(t, f.resume.empty() ? f.checkpoint_dir : f.resume,
                                             /*fresh_if_none=*/f.resume.empty());
    if (world.rank() == 0)
      std::printf(from.empty() ? "no checkpoint in %s yet: starting at step 0\n"
                               : "resumed from %s at step %d\n",
                  from.empty() ? f.checkpoint_dir.c_str() : from.c_str(), t.steps_done());
  }
  const TrainOptions& o = t.options();
  using B = typename Tr::Backend;
  if (world.rank() != 0) return;
  std::printf(
      "trident %s: %s | %lld parameters (%s)\n  batch %d x %d tokens, %d microbatches | %s%s, "
      "ZeRO-%d, %s/%s | device %s, collectives %s\n  data %s\n",
      P::kName, t.mesh().to_string().c_str(), p.parameter_count(), p.shape().c_str(), o.batch,
      t.model().seq(), o.microbatches, pp::to_string(o.schedule), o.sequence_parallel ? ", SP" : "",
      o.zero.stage, f.run.dtype.c_str(), f.run.precision.c_str(), B::device_name().c_str(),
      backend::to_string(t.device_mesh().path()), data.name().c_str());
  if (!t.pipeline_note().empty())
    std::printf("pipeline messages: host staging, not NCCL: %s\n", t.pipeline_note().c_str());
}

// Steps h.first..h.last-1: a progress line per --log-every, the held-out loss per --eval-every,
// a checkpoint per --save-every.
template <class Tr>
void run_steps(const Comm& world, Tr& t, const ProgramFlags& f, TokenSource& data,
               const std::optional<TokenSource>& held_out, TrainHistory& h, MetricsLog& log) {
  const double tokens = double(t.options().batch) * t.model().seq();
  double elapsed = 0;
  for (int s = h.first; s < h.last; ++s) {
    if (s == h.first + 1) h.window = ReportWindow(t);  // the first step warms up
    log.begin_step();
    const double injected = fault::injected_seconds();
    StepResult r = (s == 0 && !f.dump_grads.empty())
                       ? dump_gradients_and_step(t, data, f.dump_grads)
                       : t.step();
    if (s > h.first)
      h.waits.add(world, flight_recorder().step_log(), r, fault::injected_seconds() - injected);
    log.step(world, s, r, tokens, s == h.first, s > h.first ? &h.waits : nullptr);
    h.losses.push_back(r.loss);
    h.seconds.push_back(r.seconds);
    if (r.skipped) h.skipped.push_back(s);
    elapsed += r.seconds;
    if (s > h.first) h.measured.push_back(r);
    const bool spike = gradient_spike(h.norms, r.grad_norm);
    if (std::isfinite(r.grad_norm)) h.norms.push_back(r.grad_norm);
    if (world.rank() == 0 && s == h.first) print_step_legend(t.options().optimizer.clip);
    if (world.rank() == 0 && (s % f.run.log_every == 0 || s == h.last - 1 || r.skipped || spike))
      print_step(s, r, tokens, elapsed, spike, t.options().optimizer.clip, !h.spike_explained);
    h.spike_explained = h.spike_explained || spike;
    const int every = f.inference.eval_every;
    if (every > 0 && ((s + 1) % every == 0 || s == h.last - 1)) {
      h.val_losses.push_back(evaluate(t, *held_out, f.inference.eval_batches));
      h.val_steps.push_back(t.steps_done());
      log.eval(world, t.steps_done(), h.val_losses.back(), f.inference.eval_batches);
      if (world.rank() == 0)
        std::printf("step %5d | val loss %.6f (held-out tail, %d x %d tokens)\n", s,
                    h.val_losses.back(), f.inference.eval_batches, int(tokens));
    }
    std::fflush(stdout);
    if (f.save_every > 0 && t.steps_done() % f.save_every == 0) {
      const std::string path = save_checkpoint(t, f.checkpoint_dir, f.keep);
      if (world.rank() == 0)
        std::printf("checkpoint %s (after %d steps)\n", path.c_str(), t.steps_done());
    }
  }
}

// Runs the whole training with compute type T and storage type S on backend B.
template <class T, class S, class B, class P>
int train(const Comm& world, const P& p, const ProgramFlags& f, TokenSource data,
          const std::optional<TokenSource>& held_out, MetricsLog& log) {
  Trainer<decltype(p.model()), T, S, B> t(world, p.model(), f.o, data);
  start(world, p, t, f, data);
  Outcome x;
  x.peak = hardware_peak<T, B>(world, f.run.precision, default_calibration_cache());
  x.flops_per_token = model_flops_per_token(t.model());
  log.set_mfu(x.flops_per_token, x.peak);
  TrainHistory h;
  if (!f.no_waits) h.waits = WaitAttribution(world);
  h.first = t.steps_done();
  h.last = f.stop_after > 0 ? std::min(f.stop_after, f.run.steps) : f.run.steps;
  if (h.first >= h.last) {
    if (world.rank() == 0) std::printf("nothing to run: at step %d of %d\n", h.first, h.last);
    return 0;
  }
  run_steps(world, t, f, data, held_out, h, log);
  // the first step warms up: a run of one step has no measured throughput (NaN, printed n/a)
  double seconds = 0;
  for (const StepResult& r : h.measured) seconds += r.seconds;
  const double tokens = double(t.options().batch) * t.model().seq();
  x.tokens_per_s = h.measured.empty() ? std::nan("") : h.measured.size() * tokens / seconds;
  x.mfu = model_flops_utilization(x.flops_per_token, x.tokens_per_s, x.peak);
  x.report = h.window.report(t, h.measured);
  if (!f.save.empty()) save_weights(t, f.save);
  if (f.inference.sample.tokens > 0)
    x.sampled = sample(t, prompt_tokens(f.inference), f.inference.sample);
  if (world.rank() == 0) print_closing(t, f, h, x);
  write_outputs(world, p, t, f, data, h, x);
  return 0;
}

// The program's own flags: weights, checkpoints, traces, inference.
inline void add_program_options(cli::App& app, ProgramFlags& f) {
  app.add_option("--init", f.init, "initial weights (safetensors, the model's names)");
  app.add_option("--save", f.save, "write the final weights (safetensors)");
  app.add_option("--checkpoint-dir", f.checkpoint_dir,
                 "directory of full checkpoints (DIR/step-N: parameters, optimizer, step)");
  app.add_option("--save-every", f.save_every, "write a checkpoint every N steps")
      ->check(cli::NonNegativeNumber);
  app.add_option("--keep", f.keep, "checkpoints to keep (the newest; 0 keeps all)")
      ->check(cli::NonNegativeNumber)
      ->capture_default_str();
  f.resume_flag = app.add_option("--resume", f.resume,
                                 "continue from a checkpoint, or (no value) from the newest "
                                 "in --checkpoint-dir")
                      ->expected(0, 1);
  app.add_option("--stop-after", f.stop_after,
                 "end the run after this step, as if cut off (the schedule still plans --steps)")
      ->check(cli::PositiveNumber);
  app.add_option("--dump-grads", f.dump_grads, "write the first step's gradients, loss and batch");
  app.add_option("--trace", f.trace, "write the last step's timeline as a Chrome trace (Perfetto)");
  app.add_option("--svg", f.svg, "write the last step's timeline as an SVG picture");
  app.add_flag("--no-waits", f.no_waits,
               "do not attribute each rank's waiting to the rank it waited for (the report's "
               "'who made whom wait'; on by default)");
  app.add_option("--html", f.html,
                 "write the run report as one self-contained web page (curves, memory, traffic, "
                 "the last step's pipeline, who made whom wait)");
  app.add_option("--metrics", f.metrics,
                 "write a JSON line per step as the run goes (loss, gradient norm, learning "
                 "rate, tokens/s, MFU, memory and traffic; held-out losses on their own lines)");
  add_inference_options(app, f.inference);
  app.set_config("--config",
                 "read the flags from a TOML file (each flag a key without its dashes, e.g. tp = "
                 "2; the command line overrides it)");
  app.add_option("--write-config", f.write_config,
                 "write this run's effective configuration as a TOML file for --config (also in "
                 "--json's config_file)");
}

// --write-config, at the start (rank 0 writes; every rank fails alike when it cannot).
inline void write_config(const Comm& world, const ProgramFlags& f) {
  if (f.write_config.empty()) return;
  int written = 0;
  if (world.rank() == 0) {
    std::ofstream out(f.write_config);
    out << "# trident: a run's effective configuration; rerun with --config " << f.write_config
        << "\n"
        << f.config;
    written = out ? 1 : 0;
  }
  world.broadcast(Span<int>(&written, 1), 0);
  require(written == 1, "--write-config: cannot write " + f.write_config);
}

// The flags' own checks, after parsing.
inline void check_program_options(ProgramFlags& f, int vocab) {
  f.resuming = f.resume_flag->count() > 0;
  require(f.save_every == 0 || !f.checkpoint_dir.empty(), "--save-every needs --checkpoint-dir");
  require(!f.resuming || !f.resume.empty() || !f.checkpoint_dir.empty(),
          "--resume without a path needs --checkpoint-dir");
  check_inference_options(f.inference, vocab);
}

}  // namespace program_detail

// The whole program: flags, data, the trainer on the device, dtype and precision asked for.
template <class P>
int train_program(int argc, char** argv, P p) {
  return run_main(argc, argv, [&](int argc, char** argv) {
    const Comm world = Comm::world();
    ProgramFlags f;
    TrainOptions& o = f.o;
    o.batch = 16;
    o.optimizer.lr = 3e-3;
    cli::App app{P::kDescription};
    app.last_value_wins();
    p.add_model_options(app);
    add_run_options(app, o, f.run, p.seed());
    program_detail::add_program_options(app, f);
    p.add_options(app);
    parse_command_line(app, argc, argv, world);
    f.config = app.config_text({"--write-config"});
    program_detail::write_config(world, f);
    p.after_parse(app);
    apply_run_options(world, o, f.run);
    program_detail::check_program_options(f, p.model().vocab());
    // opened now, so that an unwritable file fails at the start; a resumed run appends
    MetricsLog metrics =
        f.metrics.empty() ? MetricsLog() : MetricsLog(world, f.metrics, f.resuming);
    if (!f.html.empty()) io::check_writable(world, f.html, "--html");
    if (p.before_data(world, o, f.run)) return 0;
    TokenSource data = load_data(world, f.run.data, p.model().vocab(), p.model().seq());
    // --eval-every: the tail of the data is held out, never trained on
    std::optional<TokenSource> held_out;
    if (f.inference.eval_every > 0) {
      auto [train_part, tail] = data.split_tail(f.inference.held_out, p.model().seq());
      data = std::move(train_part);
      held_out = std::move(tail);
    }
    p.before_training(world, app, o, f.run, data);
    using program_detail::train;
    return with_device(f.run.device, [&](auto device) {
      using B = decltype(device);
      if (f.run.precision == "bf16")
        return train<float, bf16, B>(world, p, f, data, held_out, metrics);
      if (f.run.dtype == "double")
        return train<double, double, B>(world, p, f, data, held_out, metrics);
      return train<float, float, B>(world, p, f, data, held_out, metrics);
    });
  });
}

}  // namespace trident
