// check_html DOM.html [REPORT.json]: passes (exit 0) when a page of io/html_report.hpp, as a
// browser left it after its script ran (chromium --dump-dom), plots exactly its numbers:
//  - the script ran to its end (body data-ready="yes");
// a training run's page (--html), given its --json report:
//  - the page carries the report whole, and its script read it;
//  - the loss and held-out loss points are the report's losses at their steps;
//  - tokens/s and MFU per step are batch x seq over step_seconds, and that x FLOPs per token
//    over the peak;
//  - each rank's memory bars are its measured bytes by kind, in MiB, and its marker the ZeRO
//    formula; the traffic bars its bytes per axis;
// zero_vs_3d's page (no report: the page's own JSON): each run's step time bar is its measured
// step, its marker the predicted one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "expect.hpp"

namespace {
using nlohmann::json;
cli_check::Expectations expect;

// (series, x) -> y of every point drawn; (label, series) -> value of every bar segment
std::map<std::pair<std::string, double>, double> points;
// (label, series) -> the values of every bar segment so named (charts may share names)
std::map<std::pair<std::string, std::string>, std::vector<double>> bars;

void read_page(const std::string& dom) {
  const std::regex point(R"re(data-series="([^"]*)" data-x="([^"]*)" data-y="([^"]*)")re");
  for (std::sregex_iterator i(dom.begin(), dom.end(), point), e; i != e; ++i)
    points[{(*i)[1], std::strtod((*i)[2].str().c_str(), nullptr)}] =
        std::strtod((*i)[3].str().c_str(), nullptr);
  const std::regex bar(R"re(data-label="([^"]*)" data-series="([^"]*)" data-value="([^"]*)")re");
  for (std::sregex_iterator i(dom.begin(), dom.end(), bar), e; i != e; ++i)
    bars[{(*i)[1], (*i)[2]}].push_back(std::strtod((*i)[3].str().c_str(), nullptr));
}

void expect_point(const std::string& series, double x, double y) {
  const auto it = points.find({series, x});
  expect(it != points.end() && it->second == y,
         series + " at " + std::to_string(x) + ": drawn " +
             (it == points.end() ? std::string("nothing") : std::to_string(it->second)) +
             ", the report " + std::to_string(y));
}

void expect_bar(const std::string& label, const std::string& series, double value) {
  if (!(value > 0)) return;  // an empty segment is not drawn
  const std::vector<double>& drawn = bars[{label, series}];
  expect(std::find(drawn.begin(), drawn.end(), value) != drawn.end(),
         label + ", " + series + ": " + std::to_string(value) + " is not drawn (" +
             std::to_string(drawn.size()) + " such segments)");
}
}  // namespace

// The page's own JSON: the text of <script ... id="page-json">.
json page_json(const std::string& dom) {
  const std::size_t tag = dom.find("id=\"page-json\"");
  const std::size_t from = dom.find('>', tag) + 1, to = dom.find("</script>", from);
  if (tag == std::string::npos || to == std::string::npos) return nullptr;
  return json::parse(dom.substr(from, to - from), nullptr, false);
}

// zero_vs_3d's page: a step-time bar and marker per run.
void check_comparison(const json& page) {
  for (const json& run : page.at("runs")) {
    expect_bar(run.at("name"), "measured", run.at("measured_step_s"));
    expect_bar(run.at("name"), "marker", run.at("predicted_step_s"));
  }
  expect(page.at("runs").size() >= 2, "runs compared: " + std::to_string(page.at("runs").size()));
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: check_html DOM.html [REPORT.json]\n");
    return 2;
  }
  std::stringstream dom;
  dom << std::ifstream(argv[1]).rdbuf();
  expect(dom.str().find("data-ready=\"yes\"") != std::string::npos, "the page's script ran");
  read_page(dom.str());
  const json page = page_json(dom.str());
  if (argc == 2) {
    check_comparison(page);
    if (expect.failures == 0)
      std::printf("the page plots its runs: %zu bar segments\n", bars.size());
    return expect.status();
  }
  json j;
  try {
    std::ifstream(argv[2]) >> j;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cannot read %s: %s\n", argv[2], e.what());
    return 2;
  }
  expect(page == j, "the page carries the report whole");
  expect(dom.str().find("data-steps=\"" + std::to_string(j.at("losses").size()) + "\"") !=
             std::string::npos,
         "the script read the embedded report");
  const int first = j.at("first_step");
  for (std::size_t k = 0; k < j.at("losses").size(); ++k)
    expect_point("loss", first + double(k), j.at("losses")[k]);
  for (std::size_t k = 0; k < j.at("val_losses").size(); ++k)
    expect_point("held-out loss", j.at("val_steps")[k], j.at("val_losses")[k]);
  const json& m = j.at("mfu");
  const double tokens =
      j.at("config").at("batch").get<double>() * j.at("config").at("seq").get<double>();
  for (std::size_t k = 0; k < j.at("step_seconds").size(); ++k) {
    const double rate = tokens / j.at("step_seconds")[k].get<double>();
    expect_point("tokens/s", first + double(k), rate);
    expect_point(
        "MFU", first + double(k),
        rate * m.at("model_flops_per_token").get<double>() / m.at("peak_flops").get<double>());
  }
  const double mib = 1.0 / (1 << 20);
  for (std::size_t r = 0; r < j.at("ranks").size(); ++r) {
    const json& rank = j.at("ranks")[r];
    const std::string label = "rank " + std::to_string(r);
    for (const char* kind :
         {"parameters", "gradients", "optimizer", "activations_peak", "buffers_peak"})
      expect_bar(label, kind, rank.at("memory_bytes").at(kind).get<double>() * mib);
    for (const char* axis : {"tp", "pp", "dp", "emb", "cp"})
      expect_bar(label, axis, rank.at("traffic_bytes_per_step").at(axis).get<double>() * mib);
  }
  expect(points.size() >= 2 * j.at("losses").size(),
         "points drawn: " + std::to_string(points.size()));
  if (expect.failures == 0)
    std::printf("the page plots the report's numbers: %zu points, %zu bar segments\n",
                points.size(), bars.size());
  return expect.status();
}
