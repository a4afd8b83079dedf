// tests/cli/read_reports.hpp: the command line of the compare_* tools, `NAME A.json B.json
// TOLERANCE`: the two run reports and the tolerance, or exit status 2 with the reason.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

struct RunReports {
  nlohmann::json a, b;
  double tolerance = 0;
};

inline RunReports read_reports(int argc, char** argv, const char* name) {
  RunReports r;
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s A.json B.json TOLERANCE\n", name);
    std::exit(2);
  }
  try {
    std::ifstream(argv[1]) >> r.a;
    std::ifstream(argv[2]) >> r.b;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cannot read the run reports: %s\n", e.what());
    std::exit(2);
  }
  r.tolerance = std::atof(argv[3]);
  return r;
}
