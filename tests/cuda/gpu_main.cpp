// tests/cuda/gpu_main.cpp: doctest's main for the tests that need a GPU, one process (MPICH's
// singleton start: no mpiexec). With no CUDA device visible it prints why and exits 77, which
// ctest reports as skipped (SKIP_RETURN_CODE), never as passed; otherwise it runs the tests on
// device 0.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include <trident/backend/cuda/device.hpp>
#include <trident/core/environment.hpp>

int main(int argc, char** argv) {
  trident::Environment env(argc, argv);  // the trainer's mesh needs MPI
  const auto visible = trident::backend::cuda::visible_devices();
  if (visible.count == 0) {
    std::printf("SKIPPED: these tests need a GPU and none is visible (%s)\n",
                visible.reason.c_str());
    return 77;
  }
  trident::backend::cuda::require_device(0);
  std::printf("on %s\n", trident::backend::cuda::device_name(0).c_str());
  doctest::Context context(argc, argv);
  return context.run();
}
