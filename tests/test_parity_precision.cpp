// float and bf16 mixed precision against the single-process reference in float, on TP2-PP2-DP2
// and with context parallelism on CP2-DP2. (Here, in the gpt2 bundle, not in the context-parallel
// test's llama bundle: a Trainer<float, bf16> compiled there with the tests' flags would stand in
// for the library's and break test_emulated's bit-for-bit comparison with it.)
//
// Tolerances, and why (measured values in brackets, from this test's first runs):
//  - float: the meshes sum in other orders (GEMM blocking, TP/DP reductions), so results agree
//    to a few units of float's round-off 6e-8, amplified by Adam's normalisation for elements
//    whose gradient is itself near round-off. Loss 1e-6 [6e-8], gradient norm 1e-5 [4e-7],
//    parameters (whole-model 2-norm) 1e-4 [7.5e-6].
//  - bf16 (ZeRO paper's mixed precision: bf16 parameters and gradients, float master weights
//    and moments): every weight the model computes with is its master rounded to 8 significant
//    bits (round-off 2^-9 = 2e-3), and gradients are rounded likewise before the reduction; the
//    parameters compared are the bf16 copies. Loss 5e-3 [6e-4], gradient norm 5e-3 [6e-4],
//    parameters 3e-2 [9.6e-3].
#include "parity.hpp"

using namespace trident;

TEST_CASE("float and bf16 mixed precision on TP2-PP2-DP2 (ZeRO-1 and ZeRO-3, m=2)") {
  TRIDENT_RANKS(8, comm);
  gpt2::Options o = test::small_options({2, 2, 2});
  o.microbatches = 2;
  for (int stage : {1, 3}) {
    o.zero = ZeroPolicy{stage};
    INFO("ZeRO-" << stage);
    test::check_parity<float>(comm, o, 3, test::Tolerance{1e-6, 1e-5, 1e-4, true});
    test::check_parity<float, bf16>(comm, o, 3, test::Tolerance{5e-3, 5e-3, 3e-2, true});
  }
}

TEST_CASE("float and bf16 mixed precision on CP2-DP2 (ZeRO-1), ring attention") {
  TRIDENT_RANKS(4, comm);
  gpt2::Options o = test::small_options({1, 1, 2, 2});
  o.batch = 4;
  o.zero = ZeroPolicy{1};
  test::check_parity<float>(comm, o, 3, test::Tolerance{1e-6, 1e-5, 1e-4, true});
  test::check_parity<float, bf16>(comm, o, 3, test::Tolerance{5e-3, 5e-3, 3e-2, true});
}
