// trident/io/device_flag.hpp: --device, the hardware a training program runs on, and the backend
// type behind it (docs/ARCHITECTURE.md §4.1).
//
//   cpu        backend::Cpu (the default): host memory, OpenMP and the BLAS
//   emulated   backend::Emulated: the CPU as a separate device, its memory guarded (host code
//              touching it dies with a message), its collectives staged through the host
//   cuda       backend::Cuda: rank r on GPU r mod n, NCCL or host staging; only in a program
//              compiled by nvcc in a CUDA build (TRIDENT_WITH_CUDA)
// check_device_flag refuses what this program cannot run with one Error, the same on every rank
// (agree: the first failing rank's text); with_device calls the run with the backend named.
#pragma once

#include <string>

#include "../backend/cpu/cpu.hpp"
#include "../backend/emulated/emulated.hpp"
#include "../core/environment.hpp"
#include "../core/error.hpp"
#if defined(TRIDENT_WITH_CUDA)
#include "../backend/cuda/device.hpp"
#endif
#if defined(TRIDENT_WITH_CUDA) && defined(__CUDACC__)
#include "../backend/cuda/cuda.cuh"
#define TRIDENT_DEVICE_FLAG_CUDA 1
#endif

namespace trident {

inline void check_device_flag(const Comm& world, const std::string& device) {
  if (device == "cpu" || device == "emulated") return;
  require(device == "cuda", "--device: expected cpu, emulated or cuda, got '" + device + "'");
#if defined(TRIDENT_DEVICE_FLAG_CUDA)
  const auto visible = backend::cuda::visible_devices();
  agree(world, visible.count > 0,
        "--device cuda: no CUDA device is visible to this process (" + visible.reason +
            "); run on a machine with an NVIDIA GPU and its driver, or use --device cpu");
#elif defined(TRIDENT_WITH_CUDA)
  (void)world;
  fail(
      "--device cuda: this program was compiled by the host compiler, not nvcc, so it has no "
      "CUDA kernels; build it in the CUDA build (-DTRIDENT_WITH_CUDA=ON compiles train_gpt and "
      "train_llama with nvcc), or use --device cpu");
#else
  (void)world;
  fail(
      "--device cuda: this program was built without the CUDA backend (configure with "
      "-DTRIDENT_WITH_CUDA=ON); it runs on --device cpu or emulated");
#endif
}

// run(B{}) with the backend type --device names (checked by check_device_flag).
template <class Run>
int with_device(const std::string& device, Run&& run) {
  if (device == "emulated") return run(backend::Emulated{});
#if defined(TRIDENT_DEVICE_FLAG_CUDA)
  if (device == "cuda") return run(backend::Cuda{});
#endif
  return run(backend::Cpu{});
}

}  // namespace trident
