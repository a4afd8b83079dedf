// trident/io/detail/cli_definitions.hpp: the definitions of io/cli.hpp, on CLI11. Compiled in the
// one translation unit of a program that defines TRIDENT_CLI_IMPLEMENTATION (io/cli.hpp).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <deque>

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

void parse_command_line(cli::App& app, int argc, char** argv, const Comm& world) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (world.rank() == 0) std::fputs(app.help().c_str(), stdout);
    throw ExitRequest{0};
  } catch (const CLI::ParseError& e) {
    fail(std::string(e.what()) + " (run with --help for the flags)");
  }
}

}  // namespace trident
