// trident/io/cli.hpp: command-line parsing (CLI11) for programs run on every rank.
//
// Every rank parses the same argv, so a bad flag is the same Error everywhere (printed once by
// run_main); --help prints on rank 0 and ends every rank with status 0.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>

#include "../core/comm.hpp"
#include "../core/error.hpp"

namespace trident {

inline void parse_command_line(CLI::App& app, int argc, char** argv, const Comm& world) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (world.rank() == 0) std::fputs(app.help().c_str(), stdout);
    throw ExitRequest{0};
  } catch (const CLI::ParseError& e) {
    fail(std::string(e.what()) + " (run with --help for the flags)");
  }
}

// The shape flags every decoder has: --layers, --hidden, --heads, --vocab, --seq (a Config with
// those members; a model adds its own, e.g. Llama's --kv-heads).
template <class Config>
void add_decoder_options(CLI::App& app, Config& model) {
  app.add_option("--layers", model.layers, "decoder blocks")->capture_default_str();
  app.add_option("--hidden", model.hidden, "hidden size C")->capture_default_str();
  app.add_option("--heads", model.heads, "attention heads")->capture_default_str();
  app.add_option("--vocab", model.vocab, "vocabulary (256 for bytes)")->capture_default_str();
  app.add_option("--seq", model.seq, "sequence length (= context)")->capture_default_str();
}

}  // namespace trident
