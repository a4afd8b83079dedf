// tests/cuda/test_kernels_host.cpp: the CUDA kernels' bodies, run on the host (backend::Cpu's
// loops), against nn/'s CPU layers in double. No GPU needed: this is what CI checks of the device
// arithmetic; test_kernels_gpu.cu runs the same checks with the bodies launched on a GPU.
#include <trident/backend/cpu/cpu.hpp>

#include "../mpi_test.hpp"
#include "kernel_checks.hpp"

using trident::backend::Cpu;
using namespace trident::test;

TEST_CASE("kernels on the host: gemm, every transpose and beta, strided") {
  check_gemm<Cpu>();
}
TEST_CASE("kernels on the host: token and position embeddings, vocab slice") {
  check_embedding<Cpu>();
}
TEST_CASE("kernels on the host: LayerNorm and RMSNorm") {
  check_norms<Cpu>();
}
TEST_CASE("kernels on the host: GELU and SwiGLU") {
  check_activations<Cpu>();
}
TEST_CASE("kernels on the host: causal attention, multi-head and grouped-query") {
  check_attention<Cpu>(2, 37, 4, 4, 8);
  check_attention<Cpu>(3, 20, 4, 2, 5);
}
TEST_CASE("kernels on the host: softmax cross-entropy with padding columns") {
  check_cross_entropy<Cpu>();
}
TEST_CASE("kernels on the host: float <-> bf16 casts, bit for bit") {
  check_bf16_casts<Cpu>();
}
TEST_CASE("kernels on the host: AdamW, three steps") {
  check_adamw<Cpu>();
}
