// trident/io/train_cli.hpp: the flags of a training run that do not depend on the model — the
// mesh, the pipeline schedule, ZeRO, precision, the data, the optimizer's steps and the report —
// shared by every training program (examples/train_gpt, examples/train_llama), which add their
// model's shape flags (e.g. models/gpt2/cli.hpp) and their own.
//
//   RunFlags f;  add_run_options(app, o, f, seed);  parse_command_line(app, argc, argv, world);
//   apply_run_options(world, o, f);  TokenSource data = load_data(world, f.data, vocab, seq);
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "../backend/cpu/threads.hpp"
#include "../core/environment.hpp"
#include "../core/fault.hpp"
#include "../core/median.hpp"
#include "../core/request.hpp"
#include "../data/tokens.hpp"
#include "../train/trainer.hpp"
#include "cli.hpp"
#include "device_flag.hpp"

namespace trident {

// What the flags set besides TrainOptions (turned into options by apply_run_options).
struct RunFlags {
  int steps = 300, threads = 0, log_every = 25;
  double timeout = wait_tuning().timeout_seconds;  // TRIDENT_TIMEOUT or 600
  std::string device = "cpu", dtype = "float", precision = "fp32", data = default_corpus(),
              schedule = "1f1b";
  std::string recompute = "none", grad_reduce = "microbatch", overlap = "auto", pp_layers = "auto",
              json, cp_split = "zigzag";
  cli::Option* microbatches = nullptr;    // given or not (default 2 x PP)
  cli::Option* virtual_stages = nullptr;  // given or not (default 1; zbv: 2)
};

// "auto" (empty: balanced by cost), or layers per virtual stage such as "3,2,2,1" or "2.5,1.5"
// (a .5 puts the stage boundary between a layer's attention and MLP halves).
inline std::vector<double> parse_pp_layers(const std::string& text) {
  if (text == "auto") return {};
  std::vector<double> split;
  std::size_t at = 0;
  for (;;) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const std::size_t dot = item.find('.');
    const std::string whole = item.substr(0, dot);
    const bool digits = !whole.empty() && whole.size() < 9 &&
                        whole.find_first_not_of("0123456789") == std::string::npos &&
                        (dot == std::string::npos || item.substr(dot) == ".5");
    require(digits,
            "--pp-layers: expected auto or layers per stage such as 3,2,2,1 or 2.5,1.5, "
            "got '" +
                text + "'");
    split.push_back(std::stoi(whole) + (dot == std::string::npos ? 0.0 : 0.5));
    if (comma == text.size()) return split;
    at = comma + 1;
  }
}

namespace detail {
// --tp --sequence-parallel --cp --cp-split --pp --schedule --microbatches --virtual-stages
// --pp-layers --recompute --verbose --dp
inline void add_mesh_options(cli::App& app, TrainOptions& o, RunFlags& f) {
  app.add_option("--tp", o.mesh.tp, "tensor-parallel size")->capture_default_str();
  app.add_flag("--sequence-parallel", o.sequence_parallel,
               "sequence parallelism (Korthikanti et al.)");
  app.add_option("--cp", o.mesh.cp,
                 "context-parallel size: ranks sharing each sequence's tokens (ring attention)")
      ->capture_default_str();
  app.add_option("--cp-split", f.cp_split,
                 "how CP ranks share a sequence: zigzag (chunks i and 2cp-1-i, balanced under "
                 "the causal mask) or contiguous")
      ->check(cli::IsMember({"zigzag", "contiguous"}))
      ->capture_default_str();
  app.add_option("--pp", o.mesh.pp, "pipeline-parallel size")->capture_default_str();
  app.add_option("--schedule", f.schedule, "pipeline schedule")
      ->check(cli::IsMember({"gpipe", "1f1b", "interleaved", "zb-h1", "zbv"}))
      ->capture_default_str();
  f.microbatches =
      app.add_option("--microbatches", o.microbatches, "microbatches per step (default 2 x PP)");
  f.virtual_stages = app.add_option("--virtual-stages", o.virtual_stages,
                                    "model chunks per pipeline rank (default: the schedule's "
                                    "fewest, interleaved and zbv 2)")
                         ->capture_default_str();
  app.add_option("--pp-layers", f.pp_layers,
                 "layers per (virtual) stage, e.g. 3,2,2,1 (the last may be 0: the head alone; "
                 "2.5,1.5: a boundary between a layer's attention and MLP halves), or auto: each "
                 "rank's cost balanced by the cost model")
      ->capture_default_str();
  app.add_option("--recompute", f.recompute,
                 "activation recomputation: none, selective (the attention core's probabilities, "
                 "recomputed from q, k, v; Korthikanti et al. 2022 §5) or full (each layer's "
                 "forward, from its input)")
      ->check(cli::IsMember({"none", "selective", "full"}))
      ->capture_default_str();
  app.add_flag("--verbose", o.verbose, "print every pipeline send and receive");
  app.add_option("--dp", o.mesh.dp, "data-parallel size")->capture_default_str();
}

// --zero --grad-reduce --overlap-grad-reduce --keep-gathered --precision
inline void add_zero_options(cli::App& app, TrainOptions& o, RunFlags& f) {
  app.add_option("--zero", o.zero.stage, "ZeRO stage")
      ->check(cli::IsMember({0, 1, 2, 3}))
      ->capture_default_str();
  app.add_option("--grad-reduce", f.grad_reduce,
                 "ZeRO-2/3 gradient reduction: per microbatch or per step")
      ->check(cli::IsMember({"microbatch", "step"}))
      ->capture_default_str();
  app.add_option("--overlap-grad-reduce", f.overlap,
                 "DP gradient reduction (ZeRO 0-1, 2-3 per step) during the backward (on) or after "
                 "it on the shared-memory path (off); auto: off when the DP group is on one node")
      ->check(cli::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  app.add_flag("--keep-gathered", o.zero.keep_gathered,
               "ZeRO-3: keep parameters gathered for the whole step");
  app.add_option("--precision", f.precision,
                 "fp32, or bf16 parameters/gradients with fp32 master weights")
      ->check(cli::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
}
}  // namespace detail

// --batch --steps --lr --seed --data-seed --dtype --data --json --device --threads --log-every
// --timeout --skip-nonfinite, then the mesh's (detail::add_mesh_options) and ZeRO's
// (detail::add_zero_options). seed: the model's initialisation seed.
inline void add_run_options(cli::App& app, TrainOptions& o, RunFlags& f, unsigned long long& seed) {
  app.add_option("--batch", o.batch, "sequences per step (global batch)")->capture_default_str();
  app.add_option("--steps", f.steps, "optimizer steps")->capture_default_str();
  app.add_option("--lr", o.optimizer.lr, "peak learning rate")->capture_default_str();
  app.add_option("--seed", seed, "initialisation seed")->capture_default_str();
  app.add_option("--data-seed", o.data_seed, "sampling seed")->capture_default_str();
  app.add_option("--dtype", f.dtype, "compute type")
      ->check(cli::IsMember({"float", "double"}))
      ->capture_default_str();
  app.add_option("--data", f.data,
                 "a token file (llm.c layout: magic 20240520, uint16/uint32 ids), a text file "
                 "(byte tokens) or 'synthetic'")
      ->capture_default_str();
  app.add_option("--json", f.json, "write the run report as JSON");
  app.add_option("--device", f.device,
                 "cpu; emulated (the CPU as a guarded device); cuda (a CUDA build: rank r on GPU r "
                 "mod n)")
      ->capture_default_str();
  app.add_option("--threads", f.threads, "threads per rank (default: cores / ranks on the node)");
  app.add_option("--log-every", f.log_every,
                 "steps between progress lines (the last step, skipped steps and gradient-norm "
                 "spikes are always printed)")
      ->capture_default_str();
  app.add_option("--timeout", f.timeout,
                 "seconds any wait may last before the watchdog reports the hang and ends the "
                 "job (default: TRIDENT_TIMEOUT, else 600)")
      ->capture_default_str();
  app.add_flag("--skip-nonfinite", o.skip_nonfinite,
               "skip a step whose loss or gradient norm is not finite (default: stop)");
  detail::add_mesh_options(app, o, f);
  detail::add_zero_options(app, o, f);
}

// The progress lines' legend, printed once above them.
inline void print_step_legend(double clip) {
  std::printf(
      "(loss: the global batch's mean cross-entropy, nats per token; norm: the global gradient\n"
      " norm before clipping to %g; lr: this step's learning rate; tokens/s: this step; s: so "
      "far;\n with experts, aux: the load-balancing loss added to the loss, load: the busiest "
      "expert's\n tokens over the mean, the worst layer)\n",
      clip);
}

// The progress line of step s: loss, gradient norm, learning rate, throughput, time so far;
// `spike`: the norm is far above the run's typical (gradient_spike), explained where `explain`
// (the run's first spike: TrainHistory keeps whether it was).
inline void print_step(int s, const StepResult& r, double tokens, double elapsed,
                       bool spike = false, double clip = 0, bool explain = false) {
  char experts[64] = "";  // a mixture of experts: its load-balancing loss and expert load
  if (r.expert_load > 0)
    std::snprintf(experts, sizeof experts, " | aux %.2e | load %.2f", r.aux_loss, r.expert_load);
  std::printf("step %5d | loss %.6f | norm %.4f | lr %.2e | %8.0f tokens/s | %7.1f s%s%s%s\n", s,
              r.loss, r.grad_norm, r.lr, tokens / r.seconds, elapsed, experts,
              r.skipped ? " | skipped: not finite" : "", spike ? " | spike" : "");
  if (spike && explain && clip > 0)
    std::printf(
        "  spike: the gradient norm is over 5x the recent median (a batch, or the weights after\n"
        "  the last update, far from the typical). Clipping scaled this step's gradient to norm\n"
        "  %g before AdamW, which bounds how far one step moves the weights; the next lines show\n"
        "  whether the loss returns to its trend.\n",
        clip);
}

// Whether `norm` is a spike: over 5x the median of the (up to 50) norms before it, given 5.
inline bool gradient_spike(const std::vector<double>& before, double norm) {
  if (before.size() < 5 || !std::isfinite(norm)) return false;
  std::vector<double> last(before.end() - std::min<std::ptrdiff_t>(before.size(), 50),
                           before.end());
  return norm > 5 * median(std::move(last));
}

// After parsing: the flags into the options (the learning-rate schedule: warmup over the first
// 5% of the steps, cosine decay to a tenth), their checks, the watchdog's timeout and the
// threads per rank. The same Error on every rank.
inline void apply_run_options(const Comm& world, TrainOptions& o, const RunFlags& f) {
  if (f.microbatches && f.microbatches->count() == 0)
    o.microbatches = o.mesh.pp > 1 ? 2 * o.mesh.pp : 1;
  o.schedule = pp::parse_schedule(f.schedule);
  if (f.virtual_stages && f.virtual_stages->count() == 0)  // the schedule's fewest: zbv's V 2
    o.virtual_stages = pp::traits(o.schedule).min_chunks;
  o.pp_layers = parse_pp_layers(f.pp_layers);
  o.recompute = parse_recompute(f.recompute);
  o.cp_split = cp_split_from_string(f.cp_split);
  o.zero.reduce = f.grad_reduce == "step" ? GradReduce::per_step : GradReduce::per_microbatch;
  o.zero.overlap = f.overlap == "on"    ? GradOverlap::overlapped
                   : f.overlap == "off" ? GradOverlap::at_end
                                        : GradOverlap::automatic;
  o.steps = f.steps;
  o.optimizer = o.optimizer.for_run(f.steps);  // warm-up 5%, cosine to lr / 10 (optim/adamw.hpp)
  require(f.steps >= 1, "--steps must be at least 1");
  fault::from_environment();  // a malformed TRIDENT_FAULT fails here, before any step
  require(f.log_every >= 1, "--log-every must be at least 1");
  require(f.threads >= 0, "--threads must be at least 0 (0: cores / ranks on the node)");
  require(f.precision != "bf16" || f.dtype == "float",
          "bf16 mixed precision computes in float: use --dtype float");
  wait_tuning().timeout_seconds = checked_timeout(f.timeout, "--timeout");
  check_device_flag(world, f.device);
  configure_threads(world, f.threads);
}

// --data: 'synthetic', or a token or text file read for sequences of `seq` tokens; an
// unreadable or malformed file is one Error on every rank.
inline TokenSource load_data(const Comm& world, const std::string& data, int vocab, int seq) {
  if (data == "synthetic") return TokenSource::synthetic(vocab);
  std::string message;
  TokenSource source = TokenSource::synthetic(vocab);
  try {
    source = TokenSource::from_file(data, seq);
  } catch (const Error& e) {
    message = e.what();
  }
  agree(world, message.empty(), message);
  return source;
}

}  // namespace trident
