// tests/cuda/test_layers_host.cpp: every layer of nn/ on the emulated device (backend::Emulated:
// the CPU behind guarded memory, so every pointer a layer gets is device memory that host code
// cannot touch) against the same layer on the CPU backend, in double (layer_checks.hpp); and the
// GEMM attention a GPU runs against the CPU's fused kernel. No GPU needed: test_layers_gpu.cu
// runs the same checks with the layers launched on a GPU.
#include <trident/backend/cpu/cpu.hpp>
#include <trident/backend/emulated/emulated.hpp>

#include "../mpi_test.hpp"
#include "layer_checks.hpp"

using trident::backend::Emulated;
using namespace trident::test;

TEST_CASE("layers on the emulated device: gemm, every transpose and beta, strided") {
  check_gemm<Emulated>();
}
TEST_CASE("layers on the emulated device: token and position embeddings, vocab slice") {
  check_embedding<Emulated>();
}
TEST_CASE("layers on the emulated device: LayerNorm and RMSNorm") {
  check_norms<Emulated>();
}
TEST_CASE("layers on the emulated device: GELU and SwiGLU") {
  check_activations<Emulated>();
}
TEST_CASE("layers on the emulated device: causal attention, multi-head and grouped-query") {
  check_attention<Emulated>(2, 37, 4, 4, 8);
  check_attention<Emulated>(3, 20, 4, 2, 5);
}
TEST_CASE("the GPU's attention (GEMMs around softmax rows) equals the CPU's fused kernel") {
  check_gemm_attention(2, 37, 4, 4, 8);
  check_gemm_attention(3, 20, 4, 2, 5);
  check_gemm_attention(1, 5, 2, 1, 3);
}
TEST_CASE("layers on the emulated device: softmax cross-entropy with padding columns") {
  check_cross_entropy<Emulated>();
}
TEST_CASE("layers on the emulated device: float <-> bf16 conversions, bit for bit") {
  check_bf16_casts<Emulated>();
}
TEST_CASE("layers on the emulated device: AdamW, three steps") {
  check_adamw<Emulated>();
}
