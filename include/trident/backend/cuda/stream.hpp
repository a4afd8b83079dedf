// trident/backend/cuda/stream.hpp: the stream every operation of the CUDA backend runs on.
//
// One stream per process, created on the device selected for the rank (select_device.hpp):
// kernels, cuBLAS calls and NCCL collectives all go into it, so they run in the order they were
// issued and a collective's result is there for the next kernel without a wait on the host.
// Copies to and from the host wait for the stream (their data must be complete).
#pragma once

#include <cuda_runtime.h>

#include "error.hpp"

namespace trident::backend::cuda {

inline cudaStream_t stream() {
  static cudaStream_t s = [] {
    cudaStream_t created = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking), "cudaStreamCreate");
    return created;
  }();
  return s;
}

}  // namespace trident::backend::cuda
