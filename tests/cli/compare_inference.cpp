// compare_inference A.json B.json TOLERANCE: passes (exit 0) when two train_gpt run reports have
// held-out losses (val_losses) after the same steps, each finite and agreeing within TOLERANCE,
// relative, and the same sample (sample_tokens, sample), both non-empty.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "read_reports.hpp"

int main(int argc, char** argv) {
  const RunReports reports = read_reports(argc, argv, "compare_inference");
  const nlohmann::json &a = reports.a, &b = reports.b;
  const double tolerance = reports.tolerance;
  int bad = 0;
  const auto &va = a.at("val_losses"), &vb = b.at("val_losses");
  if (va.empty() || a.at("val_steps") != b.at("val_steps") || va.size() != vb.size()) {
    std::printf("held-out losses after different steps: %s and %s\n",
                a.at("val_steps").dump().c_str(), b.at("val_steps").dump().c_str());
    return 1;
  }
  for (std::size_t i = 0; i < va.size(); ++i) {
    const double x = va[i].is_number() ? va[i].get<double>() : std::nan(""),
                 y = vb[i].is_number() ? vb[i].get<double>() : std::nan("");
    const double rel = std::abs(x - y) / std::abs(x);
    std::printf("after step %d: val loss %.15f %.15f  relative difference %.2e\n",
                a["val_steps"][i].get<int>(), x, y, rel);
    bad += !(std::isfinite(x) && rel <= tolerance);
  }
  const auto &sa = a.at("sample_tokens"), &sb = b.at("sample_tokens");
  std::printf("samples: %s\n        %s\n", sa.dump().c_str(), sb.dump().c_str());
  if (sa.empty() || sa != sb || a.at("sample") != b.at("sample")) {
    std::printf("the samples differ (or are empty)\n");
    ++bad;
  }
  return bad ? 1 : 0;
}
