// check_waits REPORT.json SLOW_RANK: passes (exit 0) when a run with TRIDENT_FAULT=slow on
// SLOW_RANK (a sleep before each of its microbatches' forward passes) has its report's wait
// attribution (train/waits.hpp) right:
//  - the sleeps were made (the report's injected seconds on SLOW_RANK > 0, none elsewhere);
//  - the others' waits attributed to SLOW_RANK, over every group, are >= 90% of the injected time;
//  - SLOW_RANK is the rank waited for most;
//  - on every rank, compute + exposed communication + waiting = the step time within 5%.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "expect.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: check_waits REPORT.json SLOW_RANK\n");
    return 2;
  }
  nlohmann::json report;
  try {
    std::ifstream(argv[1]) >> report;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cannot read %s: %s\n", argv[1], e.what());
    return 2;
  }
  const int slow = std::atoi(argv[2]);
  const nlohmann::json& ranks = report.at("waits").at("ranks");
  const int n = static_cast<int>(ranks.size());
  cli_check::Expectations expect;
  std::vector<double> waited_for(std::size_t(n), 0.0);
  for (int r = 0; r < n; ++r) {
    const nlohmann::json& w = ranks[std::size_t(r)];
    const double step = w.at("step"), sum = w.at("compute").get<double>() +
                                            w.at("exposed").get<double>() +
                                            w.at("waiting").get<double>();
    expect(std::abs(step - sum) <= 0.05 * step,
           "rank " + std::to_string(r) + ": compute + exposed + waiting = " + std::to_string(sum) +
               " s, the step " + std::to_string(step) + " s");
    expect((w.at("injected").get<double>() > 0) == (r == slow),
           "rank " + std::to_string(r) + ": injected " +
               std::to_string(w.at("injected").get<double>()));
    for (const auto& [group, culprits] : w.at("waited_for").items())
      for (int c = 0; c < n; ++c)
        waited_for[std::size_t(c)] += culprits[std::size_t(c)].get<double>();
  }
  const double injected = ranks[std::size_t(slow)].at("injected");
  expect(waited_for[std::size_t(slow)] >= 0.9 * injected,
         "waits attributed to rank " + std::to_string(slow) + ": " +
             std::to_string(waited_for[std::size_t(slow)]) + " s of " + std::to_string(injected) +
             " s injected");
  for (int c = 0; c < n; ++c)
    expect(c == slow || waited_for[std::size_t(c)] < waited_for[std::size_t(slow)],
           "rank " + std::to_string(c) + " waited for more than the slow rank");
  if (expect.failures == 0)
    std::printf("waits attributed to rank %d: %.3f s of %.3f s injected (%.0f%%)\n", slow,
                waited_for[std::size_t(slow)], injected,
                100 * waited_for[std::size_t(slow)] / injected);
  return expect.status();
}
