// trident/models/gpt2/cli.hpp: GPT-2's shape flags (io/cli.hpp parses them).
#pragma once

#include "../../io/cli.hpp"
#include "config.hpp"

namespace trident::gpt2 {

// --layers, --hidden, --heads, --vocab, --seq.
inline void add_model_options(CLI::App& app, Config& model) {
  app.add_option("--layers", model.layers, "decoder blocks")->capture_default_str();
  app.add_option("--hidden", model.hidden, "hidden size C")->capture_default_str();
  app.add_option("--heads", model.heads, "attention heads")->capture_default_str();
  app.add_option("--vocab", model.vocab, "vocabulary (256 for bytes)")->capture_default_str();
  app.add_option("--seq", model.seq, "sequence length (= context)")->capture_default_str();
}

}  // namespace trident::gpt2
