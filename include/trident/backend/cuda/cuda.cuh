// trident/backend/cuda/cuda.cuh: backend::Cuda, an NVIDIA GPU as a backend type.
//
// The interface of backend::Cpu (cpu/cpu.hpp) on the rank's device: kernel bodies launched as
// CUDA kernels (launch.cuh), GEMMs through cuBLAS (gemm.hpp), memory from the device's caching
// allocator (memory.hpp), copies on the backend's stream (stream.hpp; to and from the host they
// wait for it), and, where the build has NCCL (TRIDENT_WITH_NCCL), NCCL for the collectives of
// ranks on distinct GPUs (nccl.hpp). attach() gives local rank r GPU r mod n and chooses the
// collective path (select_device.hpp). Its kernels are not host code (kHostKernels false): a
// layer runs its device form (nn/attention.hpp: GEMMs around softmax rows), and column bodies
// take one column per thread. Code written against a backend type B instantiates with Cuda in a
// translation unit compiled by nvcc (the launch is a template).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "../collective_path.hpp"
#include "error.hpp"
#include "gemm.hpp"
#include "launch.cuh"
#include "memory.hpp"
#include "select_device.hpp"
#include "stream.hpp"
#if defined(TRIDENT_WITH_NCCL)
#include "nccl.hpp"
#endif

namespace trident::backend {

struct Cuda {
  static constexpr const char* kName = "cuda";
  static constexpr bool kHostMemory = false;
  static constexpr bool kHostKernels = false;
  static int column_width(int) { return 1; }  // one column per thread
#if defined(TRIDENT_WITH_NCCL)
  using Nccl = cuda::NcclComm;
  static constexpr bool kNccl = true;
#else
  static constexpr bool kNccl = false;
#endif

  // Collective over world: this rank's GPU, and NCCL when every rank of each node has its own
  // (host staging when ranks share one, or the build has no NCCL).
  static CollectivePath attach(const Comm& world) {
    const int device = cuda::select_device(world);
    const CollectivePath path = cuda::device_collective_path(world, device);
    return path == CollectivePath::nccl && !kNccl ? CollectivePath::host_staging : path;
  }
  static std::string device_name() {
    int device = 0;
    cudaGetDevice(&device);
    return cuda::device_name(device);
  }

  template <class Body>
  static void for_each(int n, const Body& body) {
    cuda::for_each(Index(n), body);
  }
  template <class Body>
  static void elementwise(Index n, const Body& body) {
    cuda::for_each(n, body);
  }
  template <class Body>
  static void grid(int rows, int cols, const Body& body) {
    cuda::grid(rows, cols, body);
  }
  template <class T>
  static void gemm(bool trans_a, bool trans_b, int M, int N, int K, const T* A, int lda, const T* B,
                   int ldb, T beta, T* C, int ldc) {
    cuda::gemm<T>(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
  }

  static void* allocate(std::size_t bytes) {
    return cuda::device_allocator().take(bytes);
  }
  static void release(void* p, std::size_t bytes) {
    cuda::device_allocator().give(p, bytes);
  }
  static void zero(void* p, std::size_t bytes) {
    if (bytes) cuda::check_cuda(cudaMemsetAsync(p, 0, bytes, cuda::stream()), "cudaMemsetAsync");
  }
  static void to_host(void* host, const void* device, std::size_t bytes) {
    if (!bytes) return;
    cuda::check_cuda(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, cuda::stream()),
                     "cudaMemcpyAsync");
    synchronize();
  }
  static void to_device(void* device, const void* host, std::size_t bytes) {
    if (!bytes) return;
    cuda::check_cuda(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, cuda::stream()),
                     "cudaMemcpyAsync");
    synchronize();  // the host buffer may go at once
  }
  static void copy(void* to, const void* from, std::size_t bytes) {
    if (!bytes || to == from) return;
    cuda::check_cuda(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, cuda::stream()),
                     "cudaMemcpyAsync");
  }
  static void synchronize() {
    cuda::check_cuda(cudaStreamSynchronize(cuda::stream()), "cudaStreamSynchronize");
  }
};

}  // namespace trident::backend
