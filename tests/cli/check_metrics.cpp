// check_metrics METRICS.jsonl REPORT.json: passes (exit 0) when a train_gpt run's --metrics file
// agrees with its --json report (io/metrics_log.hpp):
//  - a line per step, in order, each step's loss the report's (bit for bit), the first a warm-up;
//  - MFU: the report's model FLOPs per token equal GPT-2's 3 (L (24 h^2 + 4 s h) + 2 h V)
//    (nn/flops.hpp), each line's tokens/s is batch x seq over its seconds and its MFU that over
//    the report's peak, and the report's MFU is the same formula over its own tokens/s;
//  - per measured step (the report's steps), the largest rank's bytes on each axis are the
//    largest of the report's per-step figures; with no evaluation between them, the steps'
//    peaks of activations and buffers reach the report's (which span all measured steps);
//  - held-out losses: a line for each of the report's, after the same steps;
//  - each measured step's waits (train/waits.hpp) per rank; none for the warm-up.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "expect.hpp"

namespace {
using nlohmann::json;
cli_check::Expectations expect;
bool close(double a, double b, double tol = 1e-12) {
  return std::abs(a - b) <= tol * std::max({1.0, std::abs(a), std::abs(b)});
}
std::string str(double x) {
  char s[40];
  std::snprintf(s, sizeof s, "%.17g", x);
  return s;
}

// The largest of the report's ranks' values of ranks[k][group][key].
double rank_max(const json& report, const char* group, const char* key) {
  double most = 0;
  for (const json& r : report.at("ranks")) most = std::max(most, r.at(group).at(key).get<double>());
  return most;
}

void check_mfu(const json& report, const std::vector<json>& steps) {
  const json &c = report.at("config"), &m = report.at("mfu");
  const double L = c.at("layers"), h = c.at("hidden"), s = c.at("seq"), V = c.at("vocab");
  const double per_token = 3 * (L * (24 * h * h + 4 * s * h) + 2 * h * V);
  expect(m.at("model_flops_per_token").get<double>() == per_token,
         "model FLOPs per token " + str(m.at("model_flops_per_token")) + " != " + str(per_token));
  const double peak = m.at("peak_flops");
  expect(peak > 0 && close(peak, m.at("peak_flops_per_device").get<double>() *
                                     m.at("devices").get<double>()),
         "peak = devices x per device");
  expect(close(m.at("value"), per_token * report.at("tokens_per_s").get<double>() / peak),
         "the report's MFU is FLOPs per token x tokens/s / peak");
  const double tokens = c.at("batch").get<double>() * s;
  for (const json& l : steps) {
    const double rate = tokens / l.at("seconds").get<double>();
    expect(close(l.at("tokens_per_s"), rate), "step " + str(l.at("step")) + ": tokens/s");
    expect(close(l.at("mfu"), per_token * rate / peak), "step " + str(l.at("step")) + ": MFU");
  }
}

void check_measured(const json& report, const std::vector<json>& steps, bool evaluated) {
  double activations = 0, buffers = 0;
  for (std::size_t k = 1; k < steps.size(); ++k) {  // the measured steps
    const json& l = steps[k];
    for (const char* axis : {"tp", "pp", "dp", "emb", "cp"})
      expect(close(l.at("traffic_bytes").at(axis), rank_max(report, "traffic_bytes_per_step", axis),
                   1e-9),
             "step " + str(l.at("step")) + ": " + axis + " bytes " +
                 str(l.at("traffic_bytes").at(axis)) + ", the report's " +
                 str(rank_max(report, "traffic_bytes_per_step", axis)));
    activations = std::max(activations, l.at("memory_peak_bytes").at("activations").get<double>());
    buffers = std::max(buffers, l.at("memory_peak_bytes").at("buffers").get<double>());
  }
  if (evaluated || steps.size() < 2) return;
  expect(activations == rank_max(report, "memory_bytes", "activations_peak"),
         "activations peak " + str(activations) + ", the report's " +
             str(rank_max(report, "memory_bytes", "activations_peak")));
  expect(buffers == rank_max(report, "memory_bytes", "buffers_peak"),
         "buffers peak " + str(buffers) + ", the report's " +
             str(rank_max(report, "memory_bytes", "buffers_peak")));
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: check_metrics METRICS.jsonl REPORT.json\n");
    return 2;
  }
  json report;
  std::vector<json> steps, evals;
  try {
    std::ifstream(argv[2]) >> report;
    std::ifstream in(argv[1]);
    for (std::string line; std::getline(in, line);)
      (json::parse(line).contains("val_loss") ? evals : steps).push_back(json::parse(line));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cannot read: %s\n", e.what());
    return 2;
  }
  const json& losses = report.at("losses");
  expect(steps.size() == losses.size(), std::to_string(steps.size()) + " step lines, " +
                                            std::to_string(losses.size()) + " losses");
  for (std::size_t k = 0; k < std::min(steps.size(), losses.size()); ++k) {
    expect(steps[k].at("step") == report.at("first_step").get<int>() + int(k), "step numbers");
    expect(steps[k].at("loss") == losses[k], "step " + std::to_string(k) + ": loss");
    expect(steps[k].at("warmup") == (k == 0), "only the first step warms up");
    // who made whom wait: a measured step's split per rank, not the warm-up's
    const json& w = steps[k].at("waits");
    expect(k == 0 ? w.is_null()
                  : w.at("waiting_s").size() == report.at("ranks").size() &&
                        w.at("waited_for_s").at("tp").size() == report.at("ranks").size(),
           "step " + std::to_string(k) + ": waits");
  }
  check_mfu(report, steps);
  check_measured(report, steps, !evals.empty());
  const json &val = report.at("val_losses"), &after = report.at("val_steps");
  expect(evals.size() == val.size(), "a line per held-out loss");
  for (std::size_t k = 0; k < std::min(evals.size(), val.size()); ++k)
    expect(evals[k].at("val_loss") == val[k] && evals[k].at("steps_done") == after[k],
           "held-out loss " + std::to_string(k));
  if (expect.failures == 0)
    std::printf("the metrics agree with the report: %zu steps, %zu held-out losses, MFU %s\n",
                steps.size(), evals.size(), str(report.at("mfu").at("value")).c_str());
  return expect.status();
}
