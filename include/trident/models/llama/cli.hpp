// trident/models/llama/cli.hpp: the Llama-style decoder's shape flags (io/cli.hpp parses them):
// a decoder's --layers, --hidden, --heads, --vocab, --seq, and --kv-heads, --ffn, --rope-theta,
// --norm-eps, the experts' --experts, --moe-top-k, --moe-every, --moe-aux-loss-coef, --moe-ffn;
// or --hf-config, a Hugging Face config.json (models/llama/hf_config.hpp).
#pragma once

#include <string>

#include "../../io/train_cli.hpp"
#include "config.hpp"
#include "hf_config.hpp"

namespace trident::llama {

// A mixture of experts (models/llama/moe_mlp.hpp) in place of the dense MLP.
inline void add_expert_options(cli::App& app, Config& model) {
  app.add_option("--experts", model.experts,
                 "experts per MoE layer (0: a dense model; Switch Transformer, Mixtral)")
      ->capture_default_str();
  app.add_option("--moe-top-k", model.top_k,
                 "experts each token is routed to: 1 (Switch) or 2 (Mixtral)")
      ->capture_default_str();
  app.add_option("--moe-every", model.moe_every,
                 "MoE in layers 0, n, 2n, ...; the others dense (Megatron's --moe-layer-freq)")
      ->capture_default_str();
  app.add_option("--moe-aux-loss-coef", model.aux_loss_coef,
                 "the load-balancing loss's coefficient (Switch Transformer eq. 4's alpha), per "
                 "sequence")
      ->capture_default_str();
  app.add_option("--moe-ffn", model.expert_ffn_size, "an expert's MLP width (0: --ffn's)")
      ->capture_default_str();
}

inline void add_model_options(cli::App& app, Config& model, std::string& hf_config) {
  add_decoder_options(app, model);
  app.add_option("--kv-heads", model.kv_heads,
                 "key/value heads, dividing --heads (grouped-query attention)")
      ->capture_default_str();
  app.add_option("--ffn", model.ffn_size, "the MLP's width (0: 8/3 hidden, rounded up to 32)")
      ->capture_default_str();
  app.add_option("--rope-theta", model.rope_theta, "RoPE's base")->capture_default_str();
  app.add_option("--norm-eps", model.norm_eps, "RMSNorm's epsilon")->capture_default_str();
  add_expert_options(app, model);
  app.add_option("--hf-config", hf_config,
                 "a Hugging Face Llama config.json: the shape of a published checkpoint, whose "
                 "weights --init then loads (instead of the shape flags but --seq)");
}

// After parsing: --hf-config sets the shape, and no shape flag may be given with it.
inline void apply_hf_config(const cli::App& app, const std::string& hf_config, Config& model) {
  if (hf_config.empty()) return;
  for (const char* flag : {"--layers", "--hidden", "--heads", "--vocab", "--kv-heads", "--ffn",
                           "--rope-theta", "--norm-eps"})
    require(app.count(flag) == 0,
            std::string(flag) + " and --hf-config both give the model's shape: give one");
  read_hf_config(hf_config, model);
}

}  // namespace trident::llama
