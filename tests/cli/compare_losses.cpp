// compare_losses A.json B.json TOLERANCE: passes (exit 0) when two train_gpt run reports have
// the same number of steps and every step's loss is a finite number and agrees within
// TOLERANCE, relative. A NaN or infinite loss (written as null in JSON) fails.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "read_reports.hpp"

namespace {
// The loss of step i, NaN when it is not a number (JSON has no NaN: train_gpt writes null).
double loss(const nlohmann::json& losses, std::size_t i) {
  return losses[i].is_number() ? losses[i].get<double>() : std::nan("");
}
}  // namespace

int main(int argc, char** argv) {
  const RunReports reports = read_reports(argc, argv, "compare_losses");
  const nlohmann::json &a = reports.a, &b = reports.b;
  const double tolerance = reports.tolerance;
  const auto &la = a.at("losses"), &lb = b.at("losses");
  // a resumed run (first_step > 0) is compared on the steps it ran; both runs end at one step
  const std::size_t fa = a.value("first_step", 0), fb = b.value("first_step", 0);
  if (lb.empty() || fb < fa || fa + la.size() != fb + lb.size()) {
    std::fprintf(stderr, "different steps: %zu..%zu and %zu..%zu\n", fa, fa + la.size(), fb,
                 fb + lb.size());
    return 1;
  }
  int bad = 0;
  for (std::size_t i = 0; i < lb.size(); ++i) {
    const double x = loss(la, fb - fa + i), y = loss(lb, i);
    if (!std::isfinite(x) || !std::isfinite(y)) {
      std::printf("step %zu: %g %g  not a finite number\n", fb + i, x, y);
      ++bad;
      continue;
    }
    const double rel = x == y ? 0.0 : std::abs(x - y) / std::abs(x);
    std::printf("step %zu: %.15f %.15f  relative difference %.2e\n", fb + i, x, y, rel);
    bad += !(rel <= tolerance);
  }
  return bad ? 1 : 0;
}
