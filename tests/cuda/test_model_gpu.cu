// tests/cuda/test_model_gpu.cu: GPT-2 and Llama trained by the trainer on one GPU
// (Trainer<M, T, S, backend::Cuda>: parameters, gradients, AdamW moments, activations and every
// kernel on the device, GEMMs through cuBLAS with TF32 off) against the CPU: GPT-2 against the
// single-process reference (tests/parity.hpp), Llama against its own CPU run (model_parity.hpp),
// on the same data and initial weights, the checks the CPU and emulated-device tests run:
//   double: every step's loss and every parameter after 3 AdamW steps within 1e-10 relative;
//   float: loss 1e-6, gradient norm 1e-5, whole-model parameter 2-norm 1e-4 relative (float's
//   rounding in another summation order, as test_parity_precision's float meshes);
//   bf16 storage: test_parity_precision's bf16 tolerance (5e-3, 5e-3, 3e-2). Label `gpu`.
#include <trident/backend/cuda/cuda.cuh>
#include <trident/models/llama/llama.hpp>

#include "../model_parity.hpp"
#include "../parity.hpp"
#include "../small_model.hpp"

using trident::backend::Cuda;
using namespace trident;

TEST_CASE("GPT-2 on the GPU, double: every loss and parameter within 1e-10 of the reference") {
  test::check_parity<double, double, Cuda>(test::world(), test::small_options({1, 1, 1}), 3, 1e-10);
}

TEST_CASE("GPT-2 on the GPU, float and bf16 storage: within their rounding of the reference") {
  test::check_parity<float, float, Cuda>(test::world(), test::small_options({1, 1, 1}), 3,
                                         test::Tolerance{1e-6, 1e-5, 1e-4, true});
  test::check_parity<float, bf16, Cuda>(test::world(), test::small_options({1, 1, 1}), 3,
                                        test::Tolerance{5e-3, 5e-3, 3e-2, true});
}

TEST_CASE("Llama on the GPU, double: every loss and parameter within 1e-10 of the CPU run") {
  const llama::Config c = test::small_llama();
  TrainOptions o;
  o.batch = 8;
  o.optimizer = test::small_optimizer();
  const TokenSource data = TokenSource::synthetic(c.vocab);
  llama::Trainer<double, double, Cuda> gpu(test::world(), llama::Model(c), o, data);
  llama::Trainer<double> cpu(test::world(), llama::Model(c), o, data);
  test::check_against_single_process(gpu, cpu);
}
