// tests/cuda/test_model_gpu.cu: GPT-2 trained on one GPU (gpt2::BackendGPT<T, backend::Cuda>:
// parameters, gradients, AdamW moments, activations and every kernel on the device, GEMMs
// through cuBLAS with TF32 off) against the single-process CPU reference
// (gpt2::ReferenceGPT<double>) on the same data and initial weights — the checks
// tests/test_backend_model.cpp runs with backend::Cpu (tests/cuda/model_checks.hpp):
//   double: every step's loss and every parameter after 3 AdamW steps within 1e-10 relative;
//   float: loss 1e-6, gradient norm 1e-5, whole-model parameter 2-norm 1e-4 relative (float's
//   rounding in a different summation order; the CPU float run measures 4e-6). Label `gpu`.
#include <trident/backend/cuda/cuda.cuh>

#include "model_checks.hpp"

using trident::backend::Cuda;
using namespace trident::test;

TEST_CASE("GPT-2 on the GPU, double: every loss and parameter within 1e-10 of the reference") {
  check_backend_gpt<Cuda, double>({});
}

TEST_CASE("GPT-2 on the GPU, float: within float's rounding of the double reference") {
  check_backend_gpt<Cuda, float>({1e-6, 1e-5, 1e-4, true});
}
