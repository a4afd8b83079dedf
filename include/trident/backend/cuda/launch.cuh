// trident/backend/cuda/launch.cuh: a kernel body (nn/, backend/ops.hpp) launched on the GPU.
//
// for_each(n, body) runs body(i) for i in [0, n), one GPU thread per i; grid(rows, cols, body)
// body(i, j) for the elements of a matrix, one thread per element. Both on the backend's stream
// (stream.hpp), in the order of the other launches, cuBLAS calls and NCCL collectives (no
// synchronisation here: a copy to the host waits). The body is a function object with a
// TRIDENT_HOST_DEVICE operator(), passed by value (its pointers are device pointers). nvcc only.
#pragma once

#include <cuda_runtime.h>

#include "error.hpp"
#include "stream.hpp"

namespace trident::backend::cuda {

inline constexpr int kThreadsPerBlock = 256;

template <class Body>
__global__ void for_each_kernel(int n, Body body) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) body(i);
}

// body(i / cols, i % cols): a matrix's elements, one thread each.
template <class Body>
struct GridBody {
  Body body;
  int cols;
  __device__ void operator()(int k) const { body(k / cols, k % cols); }
};

template <class Body>
void for_each(int n, const Body& body) {
  if (n <= 0) return;
  const int blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  for_each_kernel<<<blocks, kThreadsPerBlock, 0, stream()>>>(n, body);
  check_cuda(cudaGetLastError(), "kernel launch");
}

template <class Body>
void grid(int rows, int cols, const Body& body) {
  if (rows <= 0 || cols <= 0) return;
  for_each(rows * cols, GridBody<Body>{body, cols});
}

}  // namespace trident::backend::cuda
