// tests/mpi_doctest_main.cpp: doctest's main for MPI (Debian's doctest ships no MPI extension).
//
// Rank 0 prints doctest's report; the other ranks capture theirs and print it only when they
// failed, in rank order. The run fails when any rank failed or no test case ran, and, with
// --no-skip (given at the largest rank count), when any test was skipped for want of ranks.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

#include <trident/backend/cpu/threads.hpp>
#include <trident/core/environment.hpp>

#include "mpi_test.hpp"

namespace {
int test_cases_started = 0;

// Records the running test's name for TRIDENT_RANKS' skip report, and counts the test cases run.
struct TestNameListener : doctest::IReporter {
  explicit TestNameListener(const doctest::ContextOptions&) {}
  void test_case_start(const doctest::TestCaseData& tc) override {
    trident::test::current_test_name() = tc.m_name;
    ++test_cases_started;
  }
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("trident-test-name", 1, TestNameListener);
}  // namespace

int main(int argc, char** argv) {
  trident::Environment env(argc, argv);
  const trident::Comm& world = trident::test::world();
  trident::configure_threads(world);

  bool no_skip = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-skip") == 0)
      no_skip = true;
    else
      args.push_back(argv[i]);
  }

  doctest::Context context;
  context.applyCommandLine(static_cast<int>(args.size()), args.data());
  std::ostringstream captured;
  if (world.rank() != 0) context.setCout(&captured);
  const int rc = context.run();
  if (context.shouldExit()) return rc;

  // A bundled program runs each CTest entry's test cases by --source-file (tests/CMakeLists.txt):
  // a filter that selects nothing would pass without checking anything, so it fails.
  if (test_cases_started == 0 && world.rank() == 0)
    std::printf("no test case matched the filters: nothing was checked\n");
  const int failed =
      world.all_reduce_value(rc != 0 || test_cases_started == 0 ? 1 : 0, trident::ReduceOp::max);
  for (int r = 1; r < world.size(); ++r) {
    world.barrier();
    if (world.rank() == r && rc != 0) {
      std::fprintf(stdout, "---- failures seen on rank %d ----\n%s", r, captured.str().c_str());
      std::fflush(stdout);
    }
  }
  world.barrier();

  const auto& skipped = trident::test::skipped();
  if (world.rank() == 0) {
    for (const auto& name : skipped)
      std::printf("[%d ranks] skipped: %s\n", world.size(), name.c_str());
    std::printf("[%d ranks] %s; %zu test(s) skipped for want of ranks%s\n", world.size(),
                failed ? "FAILED on some rank" : "passed on every rank", skipped.size(),
                no_skip && !skipped.empty() ? " -- not allowed at this rank count" : "");
  }
  return trident::leave((failed || (no_skip && !skipped.empty())) ? 1 : 0);
}
