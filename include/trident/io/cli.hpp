// trident/io/cli.hpp: command-line parsing for programs run on every rank: a small facade of
// CLI11 (the same option names, checks and messages), compiled once per program, not once per
// translation unit that adds a flag.
//
// CLI11 is header-only and its parser is inline code: every translation unit that includes it
// compiles ~9 s of it at -O3 (docs/BUILD.md). This header does not include CLI11; its
// definitions (io/detail/cli_definitions.hpp) are compiled where a program defines
// TRIDENT_CLI_IMPLEMENTATION before including it, in exactly one translation unit, as doctest's
// DOCTEST_CONFIG_IMPLEMENT (trident's own programs: instances/cli.cpp).
//
// Every rank parses the same argv, so a bad flag is the same Error everywhere (printed once by
// run_main); --help prints on rank 0 and ends every rank with status 0.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "../core/comm.hpp"
#include "../core/error.hpp"

namespace CLI {  // CLI11's, defined in io/detail/cli_definitions.hpp's translation unit
class App;
class Option;
}  // namespace CLI

namespace trident::cli {

// What a flag's value must satisfy: CLI11's validators of the same names.
struct Check {
  enum class Kind { positive, non_negative, range, member } kind;
  double low = 0, high = 0;          // range
  std::vector<std::string> members;  // member: the accepted spellings
};
inline const Check PositiveNumber{Check::Kind::positive, 0, 0, {}};
inline const Check NonNegativeNumber{Check::Kind::non_negative, 0, 0, {}};
inline Check Range(double low, double high) {
  return {Check::Kind::range, low, high, {}};
}
inline Check IsMember(std::vector<std::string> members) {
  return {Check::Kind::member, 0, 0, std::move(members)};
}
inline Check IsMember(std::initializer_list<int> members) {
  Check c{Check::Kind::member, 0, 0, {}};
  for (int m : members) c.members.push_back(std::to_string(m));
  return c;
}

// A size with an optional suffix, 4K or 64M (powers of 1024): CLI11's AsSizeValue(false).
struct AsSizeValue {
  explicit AsSizeValue(bool kb_is_1000) : kb_is_1000(kb_is_1000) {}
  bool kb_is_1000;
};

// One flag: a handle to CLI11's option, owned by its App.
class Option {
 public:
  Option* check(const Check& c);
  Option* transform(const AsSizeValue& t);
  Option* capture_default_str();
  Option* required();
  Option* expected(int min, int max);
  Option* delimiter(char separator);
  std::size_t count() const;  // how often it was given (0: not given)

  explicit Option(CLI::Option* option) : option_(option) {}

 private:
  CLI::Option* option_;
};

// A command line (or a subcommand): CLI11's App.
class App {
 public:
  explicit App(std::string description);
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  // The value types trident's programs read (unsigned long: std::size_t, std::uint64_t).
  Option* add_option(std::string name, int& value, std::string help);
  Option* add_option(std::string name, unsigned long& value, std::string help);
  Option* add_option(std::string name, unsigned long long& value, std::string help);
  Option* add_option(std::string name, double& value, std::string help);
  Option* add_option(std::string name, std::string& value, std::string help);
  Option* add_option(std::string name, std::vector<std::string>& value, std::string help);
  Option* add_flag(std::string name, bool& value, std::string help);

  // A flag given twice keeps its last value (for the options added after the call; CLI11's
  // MultiOptionPolicy::TakeLast), so a script can override a flag it was given.
  void last_value_wins();
  App* add_subcommand(std::string name, std::string description);
  App* require_subcommand(int count);
  explicit operator bool() const;  // a subcommand: given on the command line

  // --config FILE reads flags from a TOML file (CLI11's config: every long flag a key, without
  // its dashes; the command line overrides the file); an unknown key is an error.
  void set_config(std::string name, std::string help);
  // The effective configuration as such a file: every flag given, or with a shown default, at
  // its value (the last given); --help, the config flag and `skip` left out.
  std::string config_text(const std::vector<std::string>& skip = {}) const;
  void parse(int argc, char** argv);  // throws CLI11's errors (parse_command_line handles them)
  std::string help() const;
  std::size_t count(const std::string& name) const;  // how often option `name` was given

 private:
  struct Parts;  // the CLI::App, and the handles given out
  explicit App(CLI::App* subcommand);
  Option* remember(CLI::Option* option);
  std::unique_ptr<Parts> parts_;
};

}  // namespace trident::cli

namespace trident {

// Parses on every rank; --help prints on rank 0 and ends the program (ExitRequest{0}); a bad
// flag throws Error with CLI11's message, a bad key of --config's file with the file's name and
// the key's line.
void parse_command_line(cli::App& app, int argc, char** argv, const Comm& world);

// The shape flags every decoder has: --layers, --hidden, --heads, --vocab, --seq (a Config with
// those members; a model adds its own, e.g. Llama's --kv-heads).
template <class Config>
void add_decoder_options(cli::App& app, Config& model) {
  app.add_option("--layers", model.layers, "decoder blocks")->capture_default_str();
  app.add_option("--hidden", model.hidden, "hidden size C")->capture_default_str();
  app.add_option("--heads", model.heads, "attention heads")->capture_default_str();
  app.add_option("--vocab", model.vocab, "vocabulary (256 for bytes)")->capture_default_str();
  app.add_option("--seq", model.seq, "sequence length (= context)")->capture_default_str();
}

}  // namespace trident

#ifdef TRIDENT_CLI_IMPLEMENTATION
#include "detail/cli_definitions.hpp"
#endif
