// trident/backend/cuda/launch.cuh: a kernel body (nn/, backend/ops.hpp) launched on the GPU.
//
// for_each(n, body) runs body(i) for i in [0, n), one GPU thread per i (n and i an Index, 64-bit:
// an elementwise launch may pass 2^31 elements); grid(rows, cols, body) body(i, j) for the
// elements of a matrix, one thread per element (grid_cells.hpp). Both on the backend's stream
// (stream.hpp), in the order of the other launches, cuBLAS calls and NCCL collectives (no
// synchronisation here: a copy to the host waits). The body is a function object with a
// TRIDENT_HOST_DEVICE operator(), passed by value (its pointers are device pointers). nvcc only.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "../grid_cells.hpp"
#include "error.hpp"
#include "stream.hpp"

namespace trident::backend::cuda {

inline constexpr int kThreadsPerBlock = 256;

template <class Body>
__global__ void for_each_kernel(Index n, Body body) {
  const Index i = Index(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) body(i);
}

template <class Body>
void for_each(Index n, const Body& body) {
  if (n <= 0) return;
  const Index blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  require(blocks <= 2147483647, "cuda: a launch of " + std::to_string(n) +
                                    " threads needs more blocks than a grid's 2^31 - 1");
  for_each_kernel<<<unsigned(blocks), kThreadsPerBlock, 0, stream()>>>(n, body);
  check_cuda(cudaGetLastError(), "kernel launch");
}

template <class Body>
void grid(int rows, int cols, const Body& body) {
  if (rows <= 0 || cols <= 0) return;
  for_each(Index(rows) * cols, GridCells<Body>{body, cols});
}

}  // namespace trident::backend::cuda
