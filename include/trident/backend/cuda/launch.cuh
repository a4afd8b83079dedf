// trident/backend/cuda/launch.cuh: a kernel body (backend/kernels/) launched on the GPU.
//
// for_each(n, body) runs body(i) for i in [0, n), one GPU thread per i, on the default stream,
// in the order of the other launches and cuBLAS calls (no synchronisation here: a copy to the
// host waits). The body is a function object with a TRIDENT_HOST_DEVICE operator()(int), passed
// by value (its pointers are device pointers). nvcc only.
#pragma once

#include <cuda_runtime.h>

#include "error.hpp"

namespace trident::backend::cuda {

inline constexpr int kThreadsPerBlock = 256;

template <class Body>
__global__ void for_each_kernel(int n, Body body) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) body(i);
}

template <class Body>
void for_each(int n, const Body& body) {
  if (n <= 0) return;
  const int blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  for_each_kernel<<<blocks, kThreadsPerBlock>>>(n, body);
  check_cuda(cudaGetLastError(), "kernel launch");
}

}  // namespace trident::backend::cuda
