// tests/cuda/test_layers_host.cpp: every layer of nn/ on the emulated device (backend::Emulated:
// the CPU behind guarded memory, so every pointer a layer gets is device memory that host code
// cannot touch) against the same layer on the CPU backend, in double (layer_checks.hpp); and the
// GEMM attention a GPU runs against the CPU's fused kernel. No GPU needed: test_layers_gpu.cu
// runs the same checks with the layers launched on a GPU.
#include <trident/backend/cpu/cpu.hpp>
#include <trident/backend/emulated/emulated.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>

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

// The guard itself: host code that reads device memory outside a launch or a copy dies at once
// with SIGSEGV and a message naming the byte, where a GPU would read garbage (a forked child
// does it, its stderr read back here, with the region's handler in front of the test runner's);
// the same read through the backend's copy works.
TEST_CASE("emulated device: a host read of device memory dies at once, named; a copy works") {
  trident::backend::DeviceBuffer<float, Emulated> d(trident::MemoryKind::buffers, 16);
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t child = fork();
  if (child == 0) {  // not MPI: a plain process that touches the memory and dies
    dup2(fds[1], 2);
    std::signal(SIGSEGV, SIG_DFL);  // doctest's and MPI's handlers, installed since, out
    trident::backend::emulated::GuardedRegion::install_fault_report();
    const volatile float* p = d.data();
    const float x = p[3];
    _exit(x == 0 ? 0 : 1);  // not reached
  }
  close(fds[1]);
  std::string text;
  char buf[256];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, std::size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGSEGV);
  INFO(text);
  CHECK(text.find("trident: host code read or wrote emulated device memory") != std::string::npos);
  float got = -1;
  Emulated::to_host(&got, d.data() + 3, sizeof got);
  CHECK(got == 0.0f);
}

TEST_CASE("emulated device: out of memory is an Error naming the device, the bytes, the holders") {
  const std::size_t huge = std::size_t(1) << 50;
  try {
    trident::backend::DeviceBuffer<char, Emulated> b(trident::MemoryKind::activations, huge);
    FAIL("no error");
  } catch (const trident::backend::DeviceOutOfMemory& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("emulated device (") == 0);
    CHECK(what.find("out of memory: asked for " + std::to_string(huge) + " bytes") !=
          std::string::npos);
    CHECK(what.find("this process's buffers by kind, bytes: parameters ") != std::string::npos);
    CHECK(what.find("the device: ") != std::string::npos);
  }
}
