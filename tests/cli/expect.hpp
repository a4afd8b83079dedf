// tests/cli/expect.hpp: the CLI checkers' assertion (check_html, check_metrics, check_waits): a
// failed expectation is printed ("FAILED: what") and counted; the exit status says whether any
// failed.
#pragma once

#include <cstdio>
#include <string>

namespace cli_check {

struct Expectations {
  int failures = 0;
  void operator()(bool ok, const std::string& what) {
    if (ok) return;
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
    ++failures;
  }
  int status() const { return failures == 0 ? 0 : 1; }
};

}  // namespace cli_check
