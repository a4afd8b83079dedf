// trident/io/detail/cli_definitions.hpp: the definitions of io/cli.hpp, on CLI11. Compiled in the
// one translation unit of a program that defines TRIDENT_CLI_IMPLEMENTATION (io/cli.hpp).
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <sstream>

#include "../cli.hpp"

namespace trident::cli {

namespace {
CLI::Validator to_cli11(const Check& c) {
  switch (c.kind) {
    case Check::Kind::positive:
      return CLI::PositiveNumber;
    case Check::Kind::non_negative:
      return CLI::NonNegativeNumber;
    case Check::Kind::range:
      return CLI::Range(c.low, c.high);
    case Check::Kind::member:
      break;
  }
  return CLI::IsMember(c.members);
}
}  // namespace

Option* Option::check(const Check& c) {
  option_->check(to_cli11(c));
  return this;
}
Option* Option::transform(const AsSizeValue& t) {
  option_->transform(CLI::AsSizeValue(t.kb_is_1000));
  return this;
}
Option* Option::capture_default_str() {
  option_->capture_default_str();
  return this;
}
Option* Option::required() {
  option_->required();
  return this;
}
Option* Option::expected(int min, int max) {
  option_->expected(min, max);
  return this;
}
Option* Option::delimiter(char separator) {
  option_->delimiter(separator);
  return this;
}
std::size_t Option::count() const {
  return option_->count();
}

struct App::Parts {
  std::unique_ptr<CLI::App> owned;  // the top-level App; empty for a subcommand
  CLI::App* app = nullptr;
  std::deque<Option> options;  // stable addresses: handed out as Option*
  std::deque<std::unique_ptr<App>> subcommands;
};

App::App(std::string description) : parts_(std::make_unique<Parts>()) {
  parts_->owned = std::make_unique<CLI::App>(std::move(description));
  parts_->app = parts_->owned.get();
}
App::App(CLI::App* subcommand) : parts_(std::make_unique<Parts>()) {
  parts_->app = subcommand;
}
App::~App() = default;

Option* App::remember(CLI::Option* option) {
  return &parts_->options.emplace_back(option);
}

#define TRIDENT_CLI_ADD_OPTION(type)                                                   \
  Option* App::add_option(std::string name, type& value, std::string help) {           \
    return remember(parts_->app->add_option(std::move(name), value, std::move(help))); \
  }
TRIDENT_CLI_ADD_OPTION(int)
TRIDENT_CLI_ADD_OPTION(unsigned long)
TRIDENT_CLI_ADD_OPTION(unsigned long long)
TRIDENT_CLI_ADD_OPTION(double)
TRIDENT_CLI_ADD_OPTION(std::string)
TRIDENT_CLI_ADD_OPTION(std::vector<std::string>)
#undef TRIDENT_CLI_ADD_OPTION

Option* App::add_flag(std::string name, bool& value, std::string help) {
  return remember(parts_->app->add_flag(std::move(name), value, std::move(help)));
}
void App::last_value_wins() {
  parts_->app->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}
App* App::add_subcommand(std::string name, std::string description) {
  CLI::App* sub = parts_->app->add_subcommand(std::move(name), std::move(description));
  return parts_->subcommands.emplace_back(new App(sub)).get();
}
App* App::require_subcommand(int count) {
  parts_->app->require_subcommand(count);
  return this;
}
App::operator bool() const {
  return parts_->app->parsed();
}
void App::set_config(std::string name, std::string help) {
  parts_->app->set_config(std::move(name), "", std::move(help));
  parts_->app->allow_config_extras(CLI::config_extras_mode::error);
}

namespace {
// A TOML value: numbers and booleans as they are, anything else a quoted string.
std::string toml_value(const std::string& v, bool flag) {
  if (flag && (v == "true" || v == "false")) return v;
  char* end = nullptr;
  if (!v.empty() && !flag) {
    (void)std::strtod(v.c_str(), &end);
    if (*end == 0) return v;
  }
  std::string quoted = "\"";
  for (char c : v) quoted += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return quoted + "\"";
}
}  // namespace

std::string App::config_text(const std::vector<std::string>& skip) const {
  std::ostringstream out;
  const CLI::Option* config = parts_->app->get_config_ptr();
  for (const CLI::Option* o : parts_->app->get_options()) {
    if (o->get_lnames().empty() || o == config || o == parts_->app->get_help_ptr()) continue;
    const std::string& name = o->get_lnames().front();
    if (std::find(skip.begin(), skip.end(), "--" + name) != skip.end()) continue;
    const bool flag = o->get_expected_max() == 0;  // takes no value
    std::vector<std::string> values = o->results();
    if (values.empty() && !o->get_default_str().empty()) values = {o->get_default_str()};
    if (values.empty() && flag) values = {"false"};
    if (values.empty()) continue;  // not given, no default shown: the program's own default
    if (flag) values = {values.back() == "false" || values.back() == "0" ? "false" : "true"};
    if (o->get_items_expected_max() <= 1) values = {values.back()};
    std::string line = name + " = ";
    if (o->get_items_expected_max() > 1) {
      line += "[";
      for (std::size_t k = 0; k < values.size(); ++k)
        line += (k ? ", " : "") + toml_value(values[k], false);
      line += "]";
    } else {
      line += toml_value(values.front(), flag);
    }
    out << line << "\n";
  }
  return out.str();
}

void App::parse(int argc, char** argv) {
  parts_->app->parse(argc, argv);
}
std::string App::help() const {
  return parts_->app->help();
}
std::size_t App::count(const std::string& name) const {
  return parts_->app->count(name);
}

}  // namespace trident::cli

namespace trident {

namespace detail {
// "FILE:LINE: key KEY: " when CLI11's message names a key of the --config file (an unknown key:
// "... parse KEY"; a wrong type: "... --KEY = VALUE") and the file has it; else "".
inline std::string config_error_place(int argc, char** argv, const std::string& message) {
  std::string file;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) file = argv[i + 1];
    if (a.rfind("--config=", 0) == 0) file = a.substr(9);
  }
  std::string key;
  const std::size_t parse = message.rfind("parse "), dashes = message.find(": --");
  if (parse != std::string::npos) key = message.substr(parse + 6);
  if (dashes != std::string::npos)
    key = message.substr(dashes + 4, message.find(' ', dashes + 4) - dashes - 4);
  std::ifstream in(file);
  int number = 0;
  for (std::string line; !file.empty() && !key.empty() && std::getline(in, line);) {
    ++number;
    const std::size_t at = line.find_first_not_of(" \t");
    if (at != std::string::npos && line.compare(at, key.size(), key) == 0 &&
        line.find_first_not_of(" \t", at + key.size()) == line.find('=', at + key.size()))
      return file + ":" + std::to_string(number) + ": key '" + key + "': ";
  }
  return "";
}
}  // namespace detail

void parse_command_line(cli::App& app, int argc, char** argv, const Comm& world) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (world.rank() == 0) std::fputs(app.help().c_str(), stdout);
    throw ExitRequest{0};
  } catch (const CLI::ParseError& e) {
    fail(detail::config_error_place(argc, argv, e.what()) + e.what() +
         " (run with --help for the flags)");
  }
}

}  // namespace trident
