// tests/cuda/test_layers_gpu.cu: every layer of nn/ launched on the GPU (backend::Cuda: the same
// kernel bodies as CUDA kernels, cuBLAS for the GEMMs, the GEMM attention) against the CPU
// backend's layers in double, the checks test_layers_host.cpp runs on the emulated device
// (layer_checks.hpp); device memory counted by MemoryStats; an impossible allocation is an Error
// naming the device and the bytes. Label `gpu`.
#include <trident/backend/cuda/cuda.cuh>

#include <string>

#include "layer_checks.hpp"

using trident::backend::Cuda;
using namespace trident;
using namespace trident::test;

TEST_CASE("layers on the GPU: cuBLAS gemm, every transpose and beta, strided") {
  check_gemm<Cuda>();
}
TEST_CASE("layers on the GPU: token and position embeddings, vocab slice") {
  check_embedding<Cuda>();
}
TEST_CASE("layers on the GPU: LayerNorm and RMSNorm") {
  check_norms<Cuda>();
}
TEST_CASE("layers on the GPU: GELU and SwiGLU") {
  check_activations<Cuda>();
}
TEST_CASE("layers on the GPU: causal attention, multi-head and grouped-query") {
  check_attention<Cuda>(2, 37, 4, 4, 8);
  check_attention<Cuda>(3, 20, 4, 2, 5);
}
TEST_CASE("layers on the GPU: softmax cross-entropy with padding columns") {
  check_cross_entropy<Cuda>();
}
TEST_CASE("layers on the GPU: float <-> bf16 conversions, bit for bit") {
  check_bf16_casts<Cuda>();
}
TEST_CASE("layers on the GPU: AdamW, three steps") {
  check_adamw<Cuda>();
}

TEST_CASE("device memory: counted by MemoryStats as on the host; out of memory is an Error") {
  const std::size_t before = memory_stats().current(MemoryKind::activations);
  {
    backend::DeviceBuffer<float, Cuda> a(MemoryKind::activations, 1000);
    CHECK(memory_stats().current(MemoryKind::activations) == before + 4000);
  }
  CHECK(memory_stats().current(MemoryKind::activations) == before);
  const std::size_t huge = std::size_t(1) << 50;  // 1 PiB
  try {
    backend::DeviceBuffer<char, Cuda> b(MemoryKind::activations, huge);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("cuda:0") != std::string::npos);
    CHECK(what.find("asked for " + std::to_string(huge) + " bytes") != std::string::npos);
  }
}
