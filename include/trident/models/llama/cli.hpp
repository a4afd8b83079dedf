// trident/models/llama/cli.hpp: the Llama-style decoder's shape flags (io/cli.hpp parses them):
// a decoder's --layers, --hidden, --heads, --vocab, --seq, and --kv-heads.
#pragma once

#include "../../io/train_cli.hpp"
#include "config.hpp"

namespace trident::llama {

inline void add_model_options(cli::App& app, Config& model) {
  add_decoder_options(app, model);
  app.add_option("--kv-heads", model.kv_heads,
                 "key/value heads, dividing --heads (grouped-query attention)")
      ->capture_default_str();
}

}  // namespace trident::llama
