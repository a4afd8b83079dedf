// examples/train_gpt: train a GPT-2-style model with any mix of TP, PP, DP and ZeRO.
//
//   mpiexec -n 8 ./train_gpt --tp 2 --pp 2 --dp 2 --zero 1 --schedule 1f1b
//   mpiexec -n 2 ./train_gpt --pp 2 --schedule zb-h1 --microbatches 8 --svg zb.svg
//   ./train_gpt --dtype double --steps 20              (the single-process reference run)
//   ./train_gpt --eval-every 50 --sample 200            (held-out loss; a sample at the end)
//   mpiexec -n 2 ./train_gpt --tp 2 --device emulated   (the CPU as a guarded device)
//   mpiexec -n 8 ./train_gpt --tp 2 --pp 2 --dp 2 --device cuda   (a CUDA build, 8 GPUs)
//   mpiexec -n 8 ./train_gpt --layout auto --memory-limit 512   (the layout chosen for you)
//
// Prints a progress line per step and a closing report: tokens/s, memory per rank by kind,
// traffic per step per axis, the pipeline bubble, each next to its formula; with --sample,
// ends with text sampled from the trained model. The program is io/train_program.hpp's, for
// GPT-2; GPT-2 adds --layout auto and --dry-run (costmodel/: they predict GPT-2 runs).
#include <trident/costmodel/layout_cli.hpp>
#include <trident/io/train_program.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/models/gpt2/trainer.hpp>

using namespace trident;

namespace {

struct GptProgram : ProgramHooks {
  static constexpr const char* kName = "train_gpt";
  static constexpr const char* kDescription =
      "Train a GPT-2-style decoder with tensor, pipeline and data parallelism plus ZeRO.";
  gpt2::Config config = {256, 64, 4, 128, 4, 1337};
  costmodel::LayoutFlags layout;  // --layout auto, --dry-run (costmodel/layout_cli.hpp)

  gpt2::Model model() const { return gpt2::Model(config); }
  unsigned long long& seed() { return config.seed; }
  void add_model_options(cli::App& app) { gpt2::add_model_options(app, config); }
  std::string shape() const {
    const gpt2::Config& c = config;
    return "L=" + std::to_string(c.layers) + " C=" + std::to_string(c.hidden) +
           " H=" + std::to_string(c.heads) + " V=" + std::to_string(c.vocab) +
           " T=" + std::to_string(c.seq);
  }
  long long parameter_count() const { return config.parameter_count(); }
  nlohmann::json config_json() const {
    return {{"vocab", config.vocab},   {"seq", config.seq},     {"layers", config.layers},
            {"hidden", config.hidden}, {"heads", config.heads}, {"seed", config.seed}};
  }

  // --- the hooks (io/train_program.hpp): the cost model's flags work on gpt2::Options -------
  void add_options(cli::App& app) { costmodel::add_layout_options(app, layout); }
  gpt2::Options options(const TrainOptions& o) const {
    gpt2::Options g;
    static_cast<TrainOptions&>(g) = o;
    g.model = config;
    return g;
  }
  bool before_data(const Comm& world, TrainOptions& o, const RunFlags& run) {
    if (!layout.dry_run) return false;
    require(layout.layout == "manual", "--dry-run predicts a given layout: not with --layout auto");
    gpt2::validate(options(o), world.size());
    if (world.rank() == 0) costmodel::print_dry_run(options(o), run);
    return true;
  }
  void before_training(const Comm& world, cli::App& app, TrainOptions& o, RunFlags& run,
                       const TokenSource& data) {
    if (layout.layout != "auto") return;
    gpt2::Options g = options(o);
    costmodel::apply_layout_auto(world, app, g, run, layout, data);
    o = g;
    config = g.model;
  }
  void extend_json(nlohmann::json& j) const {
    if (layout.choice) j["layout"] = layout_json(*layout.choice);
  }
  // --layout auto's choice: the counts, and each layout tried, predicted next to measured.
  static nlohmann::json layout_json(const costmodel::LayoutChoice& c) {
    nlohmann::json tried = nlohmann::json::array();
    for (int k = 0; k < c.tried; ++k) {
      const costmodel::LayoutCandidate& x = c.fitting[std::size_t(k)];
      tried.push_back({{"layout", costmodel::layout_name(x.options)},
                       {"peak_bytes_predicted", x.peak_bytes},
                       {"peak_bytes_measured", x.measured_peak},
                       {"buffer_bytes_predicted", x.buffer_bytes},
                       {"buffer_bytes_measured", x.measured_buffers},
                       {"step_s_predicted", x.predicted_s},
                       {"step_s_measured", x.measured_s},
                       {"chosen", k == c.winner}});
    }
    return {{"valid", c.valid},
            {"refused_by_validate", c.refused},
            {"over_memory_limit", c.over_memory},
            {"memory_limit_bytes", c.memory_limit},
            {"ranked", c.fitting.size()},
            {"tried", tried},
            {"calibration",
             {{"seconds", c.calibration_s},
              {"reused", c.calibration_reused},
              {"measured", c.calibration_measured},
              {"cache", c.calibration_cache}}}};
  }
};

}  // namespace

int main(int argc, char** argv) {
  return train_program(argc, argv, GptProgram{});
}
