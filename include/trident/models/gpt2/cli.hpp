// trident/models/gpt2/cli.hpp: GPT-2's shape flags (io/cli.hpp parses them).
#pragma once

#include "../../io/cli.hpp"
#include "config.hpp"

namespace trident::gpt2 {

// --layers, --hidden, --heads, --vocab, --seq: a decoder's (io/cli.hpp).
inline void add_model_options(cli::App& app, Config& model) {
  add_decoder_options(app, model);
}

}  // namespace trident::gpt2
