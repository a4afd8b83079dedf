// examples/train_llama: train a Llama-style decoder — RMSNorm, rotary position embeddings,
// a SwiGLU MLP, grouped-query attention, an untied LM head — with any mix of TP, PP, DP and
// ZeRO. The model (include/trident/models/llama/) is written against the public headers only,
// as a host app would write its own: its parameters and their placements, an embedding, a block
// and a head for the generic decoder stage; the trainer and this program are trident's,
// unchanged (io/train_program.hpp): checkpoints, --resume on another mesh, --eval-every,
// --sample, --init/--save, --dump-grads, --trace/--svg, as train_gpt has.
//
//   mpiexec -n 8 ./train_llama --tp 2 --pp 2 --dp 2 --zero 1 --kv-heads 2
//   mpiexec -n 2 ./train_llama --tp 2 --sequence-parallel --heads 8 --kv-heads 2
//   ./train_llama --dtype double --steps 20              (the single-process reference run)
//   mpiexec -n 2 ./train_llama --pp 2 --device emulated  (the CPU as a guarded device)
//   mpiexec -n 2 ./train_llama --checkpoint-dir ck --save-every 10; ./train_llama --resume ...
//   ./train_llama --hf-config config.json --init model.safetensors   (a Hugging Face checkpoint)
//
// Prints a progress line per step and the closing report: tokens/s, memory per rank by kind,
// traffic per step per axis, the pipeline bubble, each next to its formula.
#include <trident/io/train_program.hpp>
#include <trident/models/llama/cli.hpp>
#include <trident/models/llama/llama.hpp>

using namespace trident;

namespace {

struct LlamaProgram : ProgramHooks {
  static constexpr const char* kName = "train_llama";
  static constexpr const char* kDescription =
      "Train a Llama-style decoder (RMSNorm, RoPE, SwiGLU, grouped-query attention) with "
      "tensor, pipeline and data parallelism plus ZeRO.";
  llama::Config config = [] {
    llama::Config c;
    c.vocab = 256;
    c.seq = 64;
    c.layers = 4;
    c.hidden = 128;
    c.heads = 4;
    c.kv_heads = 2;
    c.seed = 1337;
    return c;
  }();

  llama::Model model() const { return llama::Model(config); }
  unsigned long long& seed() { return config.seed; }
  std::string hf_config;  // --hf-config: a Hugging Face config.json
  void add_model_options(cli::App& app) { llama::add_model_options(app, config, hf_config); }
  void after_parse(const cli::App& app) { llama::apply_hf_config(app, hf_config, config); }
  std::string shape() const {
    const llama::Config& c = config;
    auto s = [](long long v) { return std::to_string(v); };
    const std::string experts = !c.moe() ? ""
                                         : " E=" + s(c.experts) + " top-" + s(c.top_k) + " every " +
                                               s(c.moe_every) + " F_e=" + s(c.expert_ffn());
    return "L=" + s(c.layers) + " C=" + s(c.hidden) + " H=" + s(c.heads) + " KV=" + s(c.kv_heads) +
           " F=" + s(c.ffn()) + experts + " V=" + s(c.vocab) + " T=" + s(c.seq);
  }
  long long parameter_count() const { return config.parameter_count(); }
  nlohmann::json config_json() const {
    nlohmann::json j;
    for (const auto& [key, value] : model().describe()) j[key] = value;
    j["seed"] = config.seed;
    return j;
  }
};

}  // namespace

int main(int argc, char** argv) {
  return train_program(argc, argv, LlamaProgram{});
}
