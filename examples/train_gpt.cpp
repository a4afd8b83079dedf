// examples/train_gpt: train a GPT-2-style model with any mix of TP, PP, DP and ZeRO.
//
//   mpiexec -n 8 ./train_gpt --tp 2 --pp 2 --dp 2 --zero 1 --schedule 1f1b
//   mpiexec -n 2 ./train_gpt --pp 2 --schedule zb-h1 --microbatches 8 --svg zb.svg
//   ./train_gpt --dtype double --steps 20              (the single-process reference run)
//
// Prints a progress line per step and a closing report: tokens/s, memory per rank by kind,
// traffic per step per axis, the pipeline bubble, each next to its formula.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <trident/io/checkpoint.hpp>
#include <trident/io/chrome_trace.hpp>
#include <trident/io/weights.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/pp/svg.hpp>
#include <trident/train/report.hpp>
#include <trident/trident.hpp>

using namespace trident;

namespace {

struct Flags {
  gpt2::Options o;
  int steps = 300, threads = 0, log_every = 1;
  double timeout = wait_tuning().timeout_seconds;  // TRIDENT_TIMEOUT or 600
  std::string dtype = "float", precision = "fp32", data = default_corpus(), schedule = "1f1b";
  std::string recompute = "none", grad_reduce = "microbatch", pp_layers = "auto";
  std::string init, save, dump_grads, json, trace, svg;
  // --resume: a checkpoint, or empty for the newest in --checkpoint-dir
  std::string checkpoint_dir, resume;
  bool resuming = false;
  int save_every = 0, keep = 0, stop_after = 0;
};

// "auto" (empty: balanced by cost), or layers per virtual stage such as "3,2,2,1".
std::vector<int> parse_pp_layers(const std::string& text) {
  if (text == "auto") return {};
  std::vector<int> split;
  std::size_t at = 0;
  for (;;) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const bool digits = !item.empty() && item.size() < 9 &&
                        item.find_first_not_of("0123456789") == std::string::npos;
    require(digits,
            "--pp-layers: expected auto or layers per stage such as 3,2,2,1, got '" + text + "'");
    split.push_back(std::stoi(item));
    if (comma == text.size()) return split;
    at = comma + 1;
  }
}

// Loads --init, or resumes from a checkpoint, then prints the run's banner.
template <class T, class S>
void prepare(const Comm& world, const Flags& f, gpt2::Trainer<T, S>& t, const TokenSource& data) {
  if (!f.init.empty()) load_weights(t, f.init);
  if (f.resuming) {  // a directory with no checkpoint yet: a fresh start (every slice of a job
                     // cut by a scheduler runs the same command)
    const std::string from = resume_training(t, f.resume.empty() ? f.checkpoint_dir : f.resume,
                                             /*fresh_if_none=*/f.resume.empty());
    if (world.rank() == 0)
      std::printf(from.empty() ? "no checkpoint in %s yet: starting at step 0\n"
                               : "resumed from %s at step %d\n",
                  from.empty() ? f.checkpoint_dir.c_str() : from.c_str(), t.steps_done());
  }
  const gpt2::Options& o = t.options();
  if (world.rank() == 0)
    std::printf(
        "trident train_gpt: %s | %lld parameters (L=%d C=%d H=%d V=%d T=%d) | batch %d x "
        "%d tokens, %d microbatches | %s%s, ZeRO-%d, %s/%s | data %s\n",
        t.mesh().to_string().c_str(), o.model.parameter_count(), o.model.layers, o.model.hidden,
        o.model.heads, o.model.vocab, o.model.seq, o.batch, o.model.seq, o.microbatches,
        pp::to_string(o.schedule), o.sequence_parallel ? ", SP" : "", o.zero.stage, f.dtype.c_str(),
        f.precision.c_str(), data.name().c_str());
}

// What the steps of a run left: every step's loss, the skipped steps, and the measured steps
// (all but the first, which warms up).
struct RunLog {
  int first = 0, last = 0;  // steps [first, last)
  std::vector<double> losses;
  std::vector<int> skipped;  // steps skipped for a non-finite loss or gradient norm
  std::vector<StepResult> measured;
  double tokens_per_s = 0;  // NaN for a run of one step (printed n/a)
};

// Runs steps log.first .. log.last - 1: a progress line each, checkpoints every --save-every.
template <class T, class S>
void run_steps(const Comm& world, const Flags& f, gpt2::Trainer<T, S>& t, TokenSource& data,
               RunLog& log) {
  const double tokens = double(t.options().batch) * t.options().model.seq;
  double elapsed = 0;
  for (int s = log.first; s < log.last; ++s) {
    if (s == log.first + 1) {  // the first step warms up; the report measures the others
      comm_stats().reset();
      memory_stats().reset_peaks();
    }
    StepResult r = (s == 0 && !f.dump_grads.empty())
                       ? dump_gradients_and_step(t, data, f.dump_grads)
                       : t.step();
    log.losses.push_back(r.loss);
    if (r.skipped) log.skipped.push_back(s);
    elapsed += r.seconds;
    if (s > log.first) log.measured.push_back(r);
    if (world.rank() == 0 && (s % f.log_every == 0 || s == log.last - 1))
      std::printf("step %5d | loss %.6f | norm %.4f | lr %.2e | %8.0f tokens/s | %7.1f s%s\n", s,
                  r.loss, r.grad_norm, r.lr, tokens / r.seconds, elapsed,
                  r.skipped ? " | skipped: not finite" : "");
    std::fflush(stdout);
    if (f.save_every > 0 && t.steps_done() % f.save_every == 0) {
      const std::string path = save_checkpoint(t, f.checkpoint_dir, f.keep);
      if (world.rank() == 0)
        std::printf("checkpoint %s (after %d steps)\n", path.c_str(), t.steps_done());
    }
  }
  double seconds = 0;
  for (const StepResult& r : log.measured) seconds += r.seconds;
  log.tokens_per_s = log.measured.empty() ? std::nan("") : log.measured.size() * tokens / seconds;
}

// The timeline of the last measured step: every rank's intervals, gathered on rank 0.
pp::Timeline gather_timeline(const Comm& world, const std::vector<StepResult>& measured) {
  pp::Timeline timeline{world.size(), {}};
  std::vector<double> mine;
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

// --json: the run's configuration, losses and report.
void write_json_report(const Flags& f, const gpt2::Options& o, const std::string& data_name,
                       const RunLog& log, const RunReport& report) {
  nlohmann::json j;
  j["config"] = {{"vocab", o.model.vocab},
                 {"seq", o.model.seq},
                 {"layers", o.model.layers},
                 {"hidden", o.model.hidden},
                 {"heads", o.model.heads},
                 {"batch", o.batch},
                 {"steps", f.steps},
                 {"lr", o.optimizer.lr},
                 {"seed", o.model.seed},
                 {"dtype", f.dtype},
                 {"precision", f.precision},
                 {"data", data_name},
                 {"tp", o.mesh.tp},
                 {"pp", o.mesh.pp},
                 {"dp", o.mesh.dp},
                 {"zero", o.zero.stage},
                 {"sequence_parallel", o.sequence_parallel},
                 {"schedule", pp::to_string(o.schedule)},
                 {"microbatches", o.microbatches},
                 {"virtual_stages", o.virtual_stages},
                 {"recompute", o.recompute}};
  j["param_count"] = o.model.parameter_count();
  j["first_step"] = log.first;  // losses[k] is the loss of step first + k (0-based)
  j["losses"] = log.losses;
  j["final_loss"] = log.losses.back();
  j["tokens_per_s"] = log.tokens_per_s;  // NaN (one step) is written as null
  j["skipped_steps"] = log.skipped;
  j["bubble"] = {{"measured", report.bubble}, {"formula", report.bubble_formula}};
  for (const RankFigures& r : report.ranks)
    j["ranks"].push_back({{"coord", {r.tp, r.pp, r.dp}},
                          {"memory_bytes",
                           {{"parameters", r.parameters},
                            {"gradients", r.gradients},
                            {"optimizer", r.optimizer},
                            {"activations_peak", r.activations},
                            {"buffers_peak", r.buffers},
                            {"all_buffers_peak", r.peak_live},
                            {"cached", r.cached},
                            {"peak_rss", r.peak_rss}}},
                          {"model_states_formula_bytes", r.states.total()},
                          {"traffic_bytes_per_step",
                           {{"tp", r.traffic.tp},
                            {"pp", r.traffic.pp},
                            {"dp", r.traffic.dp},
                            {"emb", r.traffic.emb}}},
                          {"traffic_formula_bytes_per_step",
                           {{"tp", r.formula.tp},
                            {"pp", r.formula.pp},
                            {"dp", r.formula.dp},
                            {"emb", r.formula.emb}}}});
  std::ofstream out(f.json);
  require(static_cast<bool>(out << j.dump(2) << "\n"), "cannot write the report '" + f.json + "'");
}

// Runs the whole training with compute type T and storage type S.
template <class T, class S>
int train(const Comm& world, Flags& f, TokenSource data) {
  gpt2::Trainer<T, S> t(world, f.o, data);
  const Mesh<>& mesh = t.mesh();
  warn_if_tp_spans_nodes(mesh);
  prepare(world, f, t, data);
  RunLog log;
  log.first = t.steps_done();
  log.last = f.stop_after > 0 ? std::min(f.stop_after, f.steps) : f.steps;
  if (log.first >= log.last) {
    if (world.rank() == 0) std::printf("nothing to run: at step %d of %d\n", log.first, log.last);
    return 0;
  }
  run_steps(world, f, t, data, log);
  const RunReport report = make_report(t, log.measured);
  if (!f.save.empty()) save_weights(t, f.save);
  const pp::Timeline timeline = gather_timeline(world, log.measured);
  if (world.rank() != 0) return 0;
  char throughput[64] = "n/a tokens/s (one step, which warms up)";
  if (!log.measured.empty())
    std::snprintf(throughput, sizeof throughput, "%.0f tokens/s (steps %d..%d)", log.tokens_per_s,
                  log.first + 1, log.last - 1);
  std::printf("\n%d steps: loss %.4f -> %.4f | %s | %s\n", log.last - log.first, log.losses.front(),
              log.losses.back(), throughput, mesh.to_string().c_str());
  if (!log.skipped.empty()) {
    std::printf("skipped %zu step(s) with a non-finite loss or gradient norm:", log.skipped.size());
    for (int s : log.skipped) std::printf(" %d", s);
    std::printf("\n");
  }
  print_report(report, t.model(), t.options());
  std::vector<std::string> names;
  for (int r = 0; r < world.size(); ++r) names.push_back("rank " + std::to_string(r));
  if (!f.trace.empty()) pp::write_chrome_trace(f.trace, timeline, names);
  if (!f.svg.empty())
    pp::write_timeline_svg(f.svg, timeline, "train_gpt, last step, " + mesh.to_string(), "rank");
  if (!f.json.empty()) write_json_report(f, t.options(), data.name(), log, report);
  return 0;
}

// The run's flags: batch, steps, data, weights, checkpoints, reports. Returns --resume.
CLI::Option* add_run_flags(CLI::App& app, Flags& f) {
  gpt2::Options& o = f.o;
  app.add_option("--batch", o.batch, "sequences per step (global batch)")->capture_default_str();
  app.add_option("--steps", f.steps, "optimizer steps")->capture_default_str();
  app.add_option("--lr", o.optimizer.lr, "peak learning rate")->capture_default_str();
  app.add_option("--seed", o.model.seed, "initialisation seed")->capture_default_str();
  app.add_option("--data-seed", o.data_seed, "sampling seed")->capture_default_str();
  app.add_option("--dtype", f.dtype, "compute type")
      ->check(CLI::IsMember({"float", "double"}))
      ->capture_default_str();
  app.add_option("--data", f.data,
                 "a token file (llm.c layout: magic 20240520, uint16/uint32 ids), a text file "
                 "(byte tokens) or 'synthetic'")
      ->capture_default_str();
  app.add_option("--init", f.init, "initial weights (safetensors, GPT-2 names)");
  app.add_option("--save", f.save, "write the final weights (safetensors)");
  app.add_option("--checkpoint-dir", f.checkpoint_dir,
                 "directory of full checkpoints (DIR/step-N: parameters, optimizer, step)");
  app.add_option("--save-every", f.save_every, "write a checkpoint every N steps")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--keep", f.keep, "checkpoints to keep (the newest; 0 keeps all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  CLI::Option* resume = app.add_option("--resume", f.resume,
                                       "continue from a checkpoint, or (no value) from the newest "
                                       "in --checkpoint-dir")
                            ->expected(0, 1);
  app.add_option("--stop-after", f.stop_after,
                 "end the run after this step, as if cut off (the schedule still plans --steps)")
      ->check(CLI::PositiveNumber);
  app.add_option("--dump-grads", f.dump_grads, "write the first step's gradients, loss and batch");
  app.add_option("--json", f.json, "write the run report as JSON");
  app.add_option("--threads", f.threads, "threads per rank (default: cores / ranks on the node)");
  app.add_option("--log-every", f.log_every, "steps between progress lines");
  app.add_option("--timeout", f.timeout,
                 "seconds any wait may last before the watchdog reports the hang and ends the "
                 "job (default: TRIDENT_TIMEOUT, else 600)")
      ->capture_default_str();
  app.add_flag("--skip-nonfinite", o.skip_nonfinite,
               "skip a step whose loss or gradient norm is not finite (default: stop)");
  return resume;
}

// The parallel layout's flags: TP, PP and its schedule, DP and ZeRO, precision. Returns
// --microbatches.
CLI::Option* add_parallel_flags(CLI::App& app, Flags& f) {
  gpt2::Options& o = f.o;
  app.add_option("--tp", o.mesh.tp, "tensor-parallel size")->capture_default_str();
  app.add_flag("--sequence-parallel", o.sequence_parallel,
               "sequence parallelism (Korthikanti et al.)");
  app.add_option("--pp", o.mesh.pp, "pipeline-parallel size")->capture_default_str();
  app.add_option("--schedule", f.schedule, "pipeline schedule")
      ->check(CLI::IsMember({"gpipe", "1f1b", "interleaved", "zb-h1"}))
      ->capture_default_str();
  CLI::Option* microbatches =
      app.add_option("--microbatches", o.microbatches, "microbatches per step (default 2 x PP)");
  app.add_option("--virtual-stages", o.virtual_stages,
                 "model chunks per pipeline rank (interleaved)")
      ->capture_default_str();
  app.add_option("--pp-layers", f.pp_layers,
                 "layers per (virtual) stage, e.g. 3,2,2,1, or auto: balanced by the cost model")
      ->capture_default_str();
  app.add_option("--recompute", f.recompute, "activation recomputation")
      ->check(CLI::IsMember({"none", "full"}))
      ->capture_default_str();
  app.add_option("--trace", f.trace, "write the last step's timeline as a Chrome trace (Perfetto)");
  app.add_option("--svg", f.svg, "write the last step's timeline as an SVG picture");
  app.add_flag("--verbose", o.verbose, "print every pipeline send and receive");
  app.add_option("--dp", o.mesh.dp, "data-parallel size")->capture_default_str();
  app.add_option("--zero", o.zero.stage, "ZeRO stage")
      ->check(CLI::IsMember({0, 1, 2, 3}))
      ->capture_default_str();
  app.add_option("--grad-reduce", f.grad_reduce,
                 "ZeRO-2/3 gradient reduction: per microbatch or per step")
      ->check(CLI::IsMember({"microbatch", "step"}))
      ->capture_default_str();
  app.add_flag("--keep-gathered", o.zero.keep_gathered,
               "ZeRO-3: keep parameters gathered for the whole step");
  app.add_option("--precision", f.precision,
                 "fp32, or bf16 parameters/gradients with fp32 master weights")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  return microbatches;
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
    CLI::App app{
        "Train a GPT-2-style decoder with tensor, pipeline and data parallelism plus ZeRO."};
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    add_model_options(app, o.model);
    CLI::Option* resume_flag = add_run_flags(app, f);
    CLI::Option* mb = add_parallel_flags(app, f);
    parse_command_line(app, argc, argv, world);

    if (mb->count() == 0) o.microbatches = o.mesh.pp > 1 ? 2 * o.mesh.pp : 1;
    o.schedule = pp::parse_schedule(f.schedule);
    o.pp_layers = parse_pp_layers(f.pp_layers);
    o.recompute = f.recompute == "full";
    o.zero.reduce = f.grad_reduce == "step" ? GradReduce::per_step : GradReduce::per_microbatch;
    o.optimizer.steps = f.steps;
    o.optimizer.warmup = std::max(1, f.steps / 20);
    o.optimizer.min_lr = o.optimizer.lr / 10;
    require(f.steps >= 1, "--steps must be at least 1");
    f.resuming = resume_flag->count() > 0;
    fault::from_environment();  // a malformed TRIDENT_FAULT fails here, before any step
    require(f.save_every == 0 || !f.checkpoint_dir.empty(), "--save-every needs --checkpoint-dir");
    require(!f.resuming || !f.resume.empty() || !f.checkpoint_dir.empty(),
            "--resume without a path needs --checkpoint-dir");
    require(f.log_every >= 1, "--log-every must be at least 1");
    require(f.threads >= 0, "--threads must be at least 0 (0: cores / ranks on the node)");
    wait_tuning().timeout_seconds = checked_timeout(f.timeout, "--timeout");
    configure_threads(world, f.threads);

    TokenSource data = TokenSource::synthetic(o.model.vocab);
    if (f.data != "synthetic") {
      std::string message;
      try {
        data = TokenSource::from_file(f.data, o.model.seq);
      } catch (const Error& e) {
        message = e.what();
      }
      agree(world, message.empty(), message);
    }
    if (f.precision == "bf16") {
      require(f.dtype == "float", "bf16 mixed precision computes in float: use --dtype float");
      return train<float, bf16>(world, f, data);
    }
    if (f.dtype == "double") return train<double, double>(world, f, data);
    return train<float, float>(world, f, data);
  });
}
