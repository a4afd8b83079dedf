// Tensor parallelism (with and without sequence parallelism) against the single-process
// reference, in double: every step's loss and every parameter after 3 AdamW steps.
#include "parity.hpp"

using namespace trident;

TEST_CASE("single process: the trainer on a 1x1x1 mesh is the reference") {
  TRIDENT_RANKS(1, comm);
  test::check_parity<double>(comm, test::small_options({1, 1, 1}), 3, 1e-10);
}

TEST_CASE("TP=2, 4, 8 without and with sequence parallelism match the reference in double") {
  for (int tp : {2, 4, 8})
    for (bool sp : {false, true}) {
      auto comm = test::first_ranks(tp, test::current_test_name());
      if (!comm) continue;  // not among the first tp ranks (or too few ranks: recorded)
      INFO("TP=" << tp << (sp ? " with SP" : ""));
      gpt2::Options o = test::small_options({tp, 1, 1});
      o.sequence_parallel = sp;
      test::check_parity<double>(*comm, o, 3, 1e-10);
    }
}
