// examples/train_gpt: train a GPT-2-style model with any mix of TP, PP, DP and ZeRO.
//
//   mpiexec -n 8 ./train_gpt --tp 2 --pp 2 --dp 2 --zero 1 --schedule 1f1b
//   mpiexec -n 2 ./train_gpt --pp 2 --schedule zb-h1 --microbatches 8 --svg zb.svg
//   ./train_gpt --dtype double --steps 20              (the single-process reference run)
//   ./train_gpt --eval-every 50 --sample 200            (held-out loss; a sample at the end)
//   mpiexec -n 2 ./train_gpt --tp 2 --device emulated   (the CPU as a guarded device)
//   mpiexec -n 8 ./train_gpt --tp 2 --pp 2 --dp 2 --device cuda   (a CUDA build, 8 GPUs)
//
// Prints a progress line per step and a closing report: tokens/s, memory per rank by kind,
// traffic per step per axis, the pipeline bubble, each next to its formula; with --sample,
// ends with text sampled from the trained model.
#include <cstdio>
#include <optional>
#include <trident/costmodel/layout_cli.hpp>
#include <trident/io/checkpoint.hpp>
#include <trident/io/chrome_trace.hpp>
#include <trident/io/cli.hpp>
#include <trident/io/inference_cli.hpp>
#include <trident/io/run_json.hpp>
#include <trident/io/train_cli.hpp>
#include <trident/io/weights.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/pp/svg.hpp>
#include <trident/train/report.hpp>
#include <trident/trident.hpp>

using namespace trident;

namespace {

struct Flags {
  gpt2::Options o;
  RunFlags run;  // the mesh, schedule, ZeRO, data, steps, report (io/train_cli.hpp)
  std::string init, save, dump_grads, trace, svg;
  // --resume: a checkpoint, or empty for the newest in --checkpoint-dir
  std::string checkpoint_dir, resume;
  bool resuming = false;
  int save_every = 0, keep = 0, stop_after = 0;
  InferenceFlags inference;       // --eval-every, --sample, ...
  costmodel::LayoutFlags layout;  // --layout auto, --dry-run (costmodel/layout_cli.hpp)
  cli::Option* resume_flag = nullptr;
};

// What the training loop records: every step's loss, the held-out losses, the skipped steps and
// the measured steps (all but the first, which warms up).
struct History {
  int first = 0, last = 0;                 // steps [first, last) run by this process
  std::vector<double> losses, val_losses;  // val_losses[k]: held-out, after val_steps[k] steps
  std::vector<int> val_steps;
  std::vector<int> skipped;  // steps skipped for a non-finite loss or gradient norm
  std::vector<StepResult> measured;
  ReportWindow window;  // opened before the first measured step
};

// --init, then --resume (a directory with no checkpoint yet is a fresh start: every slice of a
// job cut by a scheduler runs the same command); prints the run's header line.
template <class Trainer>
void start(const Comm& world, Trainer& t, const Flags& f, const TokenSource& data) {
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
  const gpt2::Options& o = t.options();
  using B = typename Trainer::Backend;
  if (world.rank() == 0)
    std::printf(
        "trident train_gpt: %s | %lld parameters (L=%d C=%d H=%d V=%d T=%d) | batch %d x "
        "%d tokens, %d microbatches | %s%s, ZeRO-%d, %s/%s | data %s | device %s, collectives "
        "%s\n",
        t.mesh().to_string().c_str(), o.model.parameter_count(), o.model.layers, o.model.hidden,
        o.model.heads, o.model.vocab, o.model.seq, o.batch, o.model.seq, o.microbatches,
        pp::to_string(o.schedule), o.sequence_parallel ? ", SP" : "", o.zero.stage,
        f.run.dtype.c_str(), f.run.precision.c_str(), data.name().c_str(), B::device_name().c_str(),
        backend::to_string(t.device_mesh().path()));
  if (world.rank() == 0 && !t.pipeline_note().empty())
    std::printf("pipeline messages: host staging, not NCCL: %s\n", t.pipeline_note().c_str());
}

// Steps h.first..h.last-1: a progress line per --log-every, the held-out loss per --eval-every,
// a checkpoint per --save-every.
template <class Trainer>
void run_steps(const Comm& world, Trainer& t, const Flags& f, TokenSource& data,
               const std::optional<TokenSource>& held_out, History& h) {
  const double tokens = double(t.options().batch) * t.options().model.seq;
  double elapsed = 0;
  for (int s = h.first; s < h.last; ++s) {
    if (s == h.first + 1) h.window = ReportWindow(t);  // the first step warms up

    StepResult r = (s == 0 && !f.dump_grads.empty())
                       ? dump_gradients_and_step(t, data, f.dump_grads)
                       : t.step();
    h.losses.push_back(r.loss);
    if (r.skipped) h.skipped.push_back(s);
    elapsed += r.seconds;
    if (s > h.first) h.measured.push_back(r);
    if (world.rank() == 0 && (s % f.run.log_every == 0 || s == h.last - 1))
      print_step(s, r, tokens, elapsed);
    const int every = f.inference.eval_every;
    if (every > 0 && ((s + 1) % every == 0 || s == h.last - 1)) {
      h.val_losses.push_back(evaluate(t, *held_out, f.inference.eval_batches));
      h.val_steps.push_back(t.steps_done());
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

// The timeline of the last measured step: every rank's intervals, gathered on rank 0.
pp::Timeline gather_timeline(const Comm& world, const std::vector<StepResult>& measured) {
  pp::Timeline timeline{world.size(), {}};
  std::vector<double> mine;  // 6 numbers per interval
  for (const pp::Interval& sp :
       measured.empty() ? std::vector<pp::Interval>{} : measured.back().intervals)
    mine.insert(mine.end(), {double(world.rank()), double(int(sp.kind)), double(sp.microbatch),
                             double(sp.chunk), sp.begin, sp.end});
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(world.size());
  world.all_gather(Span<const int>(&count, 1), Span<int>(counts));
  const int most = *std::max_element(counts.begin(), counts.end());
  mine.resize(most, -1.0);
  std::vector<double> all(std::size_t(most) * world.size());
  world.all_gather(Span<const double>(mine), Span<double>(all));
  for (std::size_t k = 0; k + 6 <= all.size(); k += 6)
    if (all[k] >= 0)
      timeline.intervals.push_back({int(all[k]), pp::IntervalKind(int(all[k + 1])), int(all[k + 2]),
                                    int(all[k + 3]), all[k + 4], all[k + 5]});
  return timeline;
}

// Rank 0's closing lines: losses and throughput, skipped steps, the report, the sample.
template <class Trainer>
void print_closing(const Trainer& t, const Flags& f, const History& h, double tokens_per_s,
                   const RunReport& report, const std::vector<std::int32_t>& sampled) {
  const gpt2::Options& o = t.options();
  char throughput[64] = "n/a tokens/s (one step, which warms up)";
  if (!h.measured.empty())
    std::snprintf(throughput, sizeof throughput, "%.0f tokens/s (steps %d..%d)", tokens_per_s,
                  h.first + 1, h.last - 1);
  std::printf("\n%d steps: loss %.4f -> %.4f | %s | %s\n", h.last - h.first, h.losses.front(),
              h.losses.back(), throughput, t.mesh().to_string().c_str());
  if (!h.skipped.empty()) {
    std::printf("skipped %zu step(s) with a non-finite loss or gradient norm:", h.skipped.size());
    for (int s : h.skipped) std::printf(" %d", s);
    std::printf("\n");
  }
  print_report(report, t.model(), o);
  if (!sampled.empty())
    std::printf(
        "\nsample (%zu tokens after the prompt, temperature %g, top-k %d, seed %llu):\n%s%s\n",
        sampled.size(), f.inference.sample.temperature, f.inference.sample.top_k,
        static_cast<unsigned long long>(f.inference.sample.seed), f.inference.prompt.c_str(),
        tokens_as_text(sampled, o.model.vocab).c_str());
}

// Rank 0's files: --trace, --svg, --json.
// --layout auto's choice: the counts, and each layout tried, predicted next to measured.
nlohmann::json layout_json(const costmodel::LayoutChoice& c) {
  nlohmann::json tried = nlohmann::json::array();
  for (int k = 0; k < c.tried; ++k) {
    const costmodel::LayoutCandidate& x = c.fitting[std::size_t(k)];
    tried.push_back({{"layout", costmodel::layout_name(x.options)},
                     {"peak_bytes_predicted", x.peak_bytes},
                     {"peak_bytes_measured", x.measured_peak},
                     {"step_s_predicted", x.predicted_s},
                     {"step_s_measured", x.measured_s},
                     {"chosen", k == c.winner}});
  }
  return {{"valid", c.valid},
          {"over_memory_limit", c.over_memory},
          {"memory_limit_bytes", c.memory_limit},
          {"ranked", c.fitting.size()},
          {"tried", tried}};
}

template <class Trainer>
void write_outputs(const Comm& world, const Trainer& t, const Flags& f, const TokenSource& data,
                   const History& h, double tokens_per_s, const RunReport& report,
                   const std::vector<std::int32_t>& sampled) {
  const gpt2::Options& o = t.options();
  const pp::Timeline timeline = gather_timeline(world, h.measured);  // collective: every rank
  if (world.rank() != 0) return;
  std::vector<std::string> names;
  for (int r = 0; r < world.size(); ++r) names.push_back("rank " + std::to_string(r));
  if (!f.trace.empty()) pp::write_chrome_trace(f.trace, timeline, names);
  if (!f.svg.empty())
    pp::write_timeline_svg(f.svg, timeline, "train_gpt, last step, " + t.mesh().to_string(),
                           "rank");
  if (f.run.json.empty()) return;
  nlohmann::json j =
      run_json(o, f.run, data.name(), h.losses, h.first, tokens_per_s, h.skipped, report);
  j["config"].update({{"vocab", o.model.vocab},
                      {"seq", o.model.seq},
                      {"layers", o.model.layers},
                      {"hidden", o.model.hidden},
                      {"heads", o.model.heads},
                      {"seed", o.model.seed}});
  j["param_count"] = o.model.parameter_count();
  j["val_steps"] = h.val_steps;  // val_losses[k]: the held-out loss after val_steps[k] steps
  j["val_losses"] = h.val_losses;
  j["sample_tokens"] = sampled;
  j["sample"] = tokens_as_text(sampled, o.model.vocab);
  if (f.layout.choice) j["layout"] = layout_json(*f.layout.choice);
  write_json(f.run.json, j);
}

// Runs the whole training with compute type T and storage type S on backend B.
template <class T, class S, class B>
int train(const Comm& world, Flags& f, TokenSource data,
          const std::optional<TokenSource>& held_out) {
  gpt2::Trainer<T, S, B> t(world, f.o, data);
  start(world, t, f, data);
  History h;
  h.first = t.steps_done();
  h.last = f.stop_after > 0 ? std::min(f.stop_after, f.run.steps) : f.run.steps;
  if (h.first >= h.last) {
    if (world.rank() == 0) std::printf("nothing to run: at step %d of %d\n", h.first, h.last);
    return 0;
  }
  run_steps(world, t, f, data, held_out, h);
  // the first step warms up: a run of one step has no measured throughput (NaN, printed n/a)
  double seconds = 0;
  for (const StepResult& r : h.measured) seconds += r.seconds;
  const double tokens = double(t.options().batch) * t.options().model.seq;
  const double tokens_per_s =
      h.measured.empty() ? std::nan("") : h.measured.size() * tokens / seconds;
  const RunReport report = h.window.report(t, h.measured);
  if (!f.save.empty()) save_weights(t, f.save);
  const std::vector<std::int32_t> sampled =
      f.inference.sample.tokens > 0 ? sample(t, prompt_tokens(f.inference), f.inference.sample)
                                    : std::vector<std::int32_t>{};
  if (world.rank() == 0) print_closing(t, f, h, tokens_per_s, report, sampled);
  write_outputs(world, t, f, data, h, tokens_per_s, report, sampled);
  return 0;
}

// train_gpt's own flags: weights, checkpoints, traces, inference, the layout.
void add_program_options(cli::App& app, Flags& f) {
  app.add_option("--init", f.init, "initial weights (safetensors, GPT-2 names)");
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
  add_inference_options(app, f.inference);
  costmodel::add_layout_options(app, f.layout);
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    Flags f;
    gpt2::Options& o = f.o;
    o.model = {256, 64, 4, 128, 4, 1337};
    o.batch = 16;
    o.optimizer.lr = 3e-3;
    cli::App app{
        "Train a GPT-2-style decoder with tensor, pipeline and data parallelism plus ZeRO."};
    app.last_value_wins();
    add_model_options(app, o.model);
    add_run_options(app, o, f.run, o.model.seed);
    add_program_options(app, f);
    parse_command_line(app, argc, argv, world);

    apply_run_options(world, o, f.run);
    f.resuming = f.resume_flag->count() > 0;
    require(f.save_every == 0 || !f.checkpoint_dir.empty(), "--save-every needs --checkpoint-dir");
    require(!f.resuming || !f.resume.empty() || !f.checkpoint_dir.empty(),
            "--resume without a path needs --checkpoint-dir");
    check_inference_options(f.inference, o.model.vocab);
    if (f.layout.dry_run) {
      require(f.layout.layout == "manual",
              "--dry-run predicts a given layout: not with --layout auto");
      gpt2::validate(o, world.size());
      if (world.rank() == 0) costmodel::print_dry_run(o, f.run);
      return 0;
    }

    TokenSource data = load_data(world, f.run.data, o.model.vocab, o.model.seq);
    // --eval-every: the tail of the data is held out, never trained on
    std::optional<TokenSource> held_out;
    if (f.inference.eval_every > 0) {
      auto [train_part, tail] = data.split_tail(f.inference.held_out, o.model.seq);
      data = std::move(train_part), held_out = std::move(tail);
    }
    if (f.layout.layout == "auto")
      costmodel::apply_layout_auto(world, app, o, f.run, f.layout, data);
    return with_device(f.run.device, [&](auto device) {
      using B = decltype(device);
      if (f.run.precision == "bf16") return train<float, bf16, B>(world, f, data, held_out);
      if (f.run.dtype == "double") return train<double, double, B>(world, f, data, held_out);
      return train<float, float, B>(world, f, data, held_out);
    });
  });
}
