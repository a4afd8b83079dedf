// examples/train_llama: train a Llama-style decoder — RMSNorm, rotary position embeddings,
// a SwiGLU MLP, grouped-query attention, an untied LM head — with any mix of TP, PP, DP and
// ZeRO. The model (include/trident/models/llama/) is written against the public headers only,
// as a host app would write its own: its parameters and their placements, an embedding, a block
// and a head for the generic decoder stage; the trainer is trident's, unchanged.
//
//   mpiexec -n 8 ./train_llama --tp 2 --pp 2 --dp 2 --zero 1 --kv-heads 2
//   mpiexec -n 2 ./train_llama --tp 2 --sequence-parallel --heads 8 --kv-heads 2
//   ./train_llama --dtype double --steps 20              (the single-process reference run)
//   mpiexec -n 2 ./train_llama --pp 2 --device emulated  (the CPU as a guarded device)
//
// Prints a progress line per step and the closing report of train_gpt: tokens/s, memory per
// rank by kind, traffic per step per axis, the pipeline bubble, each next to its formula.
#include <cstdio>
#include <trident/core/bf16.hpp>
#include <trident/io/cli.hpp>
#include <trident/io/run_json.hpp>
#include <trident/mesh/topology.hpp>
#include <trident/models/llama/cli.hpp>
#include <trident/models/llama/llama.hpp>
#include <trident/train/report.hpp>

using namespace trident;

namespace {

// Runs the whole training with compute type T and storage type S on backend B.
template <class T, class S, class B>
int train(const Comm& world, const llama::Config& c, const TrainOptions& o, const RunFlags& f,
          const TokenSource& data) {
  llama::Trainer<T, S, B> t(world, llama::Model(c), o, data);
  const Mesh<>& mesh = t.mesh();
  warn_if_tp_spans_nodes(mesh);
  if (world.rank() == 0)
    std::printf(
        "trident train_llama: %s | %lld parameters (L=%d C=%d H=%d KV=%d F=%d V=%d T=%d) | "
        "batch %d x %d tokens, %d microbatches | %s%s, ZeRO-%d, %s/%s | data %s | device %s, "
        "collectives %s\n",
        mesh.to_string().c_str(), c.parameter_count(), c.layers, c.hidden, c.heads, c.kv_heads,
        c.ffn(), c.vocab, c.seq, o.batch, c.seq, o.microbatches, pp::to_string(o.schedule),
        o.sequence_parallel ? ", SP" : "", o.zero.stage, f.dtype.c_str(), f.precision.c_str(),
        data.name().c_str(), B::device_name().c_str(), backend::to_string(t.device_mesh().path()));
  if (world.rank() == 0 && !t.pipeline_note().empty())
    std::printf("pipeline messages: host staging, not NCCL: %s\n", t.pipeline_note().c_str());
  std::vector<double> losses;
  std::vector<int> skipped;  // steps skipped for a non-finite loss or gradient norm
  std::vector<StepResult> measured;
  ReportWindow window;  // opened before the first measured step
  const double tokens = double(o.batch) * c.seq;
  double elapsed = 0;
  for (int s = 0; s < f.steps; ++s) {
    if (s == 1) window = ReportWindow(t);  // the first step warms up; the report the others
    StepResult r = t.step();
    losses.push_back(r.loss);
    if (r.skipped) skipped.push_back(s);
    elapsed += r.seconds;
    if (s > 0) measured.push_back(r);
    if (world.rank() == 0 && (s % f.log_every == 0 || s == f.steps - 1))
      print_step(s, r, tokens, elapsed);
    std::fflush(stdout);
  }
  // a run of one step has no measured throughput (NaN, printed n/a)
  double seconds = 0;
  for (const StepResult& r : measured) seconds += r.seconds;
  const double tokens_per_s = measured.empty() ? std::nan("") : measured.size() * tokens / seconds;
  const RunReport report = window.report(t, measured);
  if (world.rank() != 0) return 0;
  char throughput[64] = "n/a tokens/s (one step, which warms up)";
  if (!measured.empty())
    std::snprintf(throughput, sizeof throughput, "%.0f tokens/s (steps 1..%d)", tokens_per_s,
                  f.steps - 1);
  std::printf("\n%d steps: loss %.4f -> %.4f | %s | %s\n", f.steps, losses.front(), losses.back(),
              throughput, mesh.to_string().c_str());
  print_report(report, t.model(), o);
  if (!f.json.empty()) {
    nlohmann::json j = run_json(o, f, data.name(), losses, 0, tokens_per_s, skipped, report);
    for (const auto& [key, value] : t.model().describe()) j["config"][key] = value;
    j["config"]["seed"] = c.seed;
    j["param_count"] = c.parameter_count();
    write_json(f.json, j);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    llama::Config c;
    c.vocab = 256, c.seq = 64, c.layers = 4, c.hidden = 128, c.heads = 4, c.kv_heads = 2;
    c.seed = 1337;
    TrainOptions o;
    o.batch = 16;
    o.optimizer.lr = 3e-3;
    RunFlags f;
    cli::App app{
        "Train a Llama-style decoder (RMSNorm, RoPE, SwiGLU, grouped-query attention) with "
        "tensor, pipeline and data parallelism plus ZeRO."};
    app.last_value_wins();
    llama::add_model_options(app, c);
    add_run_options(app, o, f, c.seed);
    parse_command_line(app, argc, argv, world);
    apply_run_options(world, o, f);

    const TokenSource data = load_data(world, f.data, c.vocab, c.seq);
    return with_device(f.device, [&](auto device) {
      using B = decltype(device);
      if (f.precision == "bf16") return train<float, bf16, B>(world, c, o, f, data);
      if (f.dtype == "double") return train<double, double, B>(world, c, o, f, data);
      return train<float, float, B>(world, c, o, f, data);
    });
  });
}
