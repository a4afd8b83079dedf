// trident/backend/cuda/cuda.cuh: backend::Cuda, an NVIDIA GPU as a backend type.
//
// The interface of backend::Cpu (cpu/cpu.hpp) on the current device: kernel bodies launched as
// CUDA kernels (launch.cuh), GEMMs through cuBLAS (gemm.hpp), memory from the device's caching
// allocator (memory.hpp), host <-> device copies with cudaMemcpy. Code written against a backend
// type B instantiates with Cuda in a translation unit compiled by nvcc (the launch is a template).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "error.hpp"
#include "gemm.hpp"
#include "launch.cuh"
#include "memory.hpp"

namespace trident::backend {

struct Cuda {
  static constexpr const char* kName = "cuda";
  static constexpr bool kHostMemory = false;

  template <class Body>
  static void for_each(int n, const Body& body) {
    cuda::for_each(n, body);
  }
  template <class T>
  static void gemm(bool trans_a, bool trans_b, int M, int N, int K, const T* A, int lda, const T* B,
                   int ldb, T beta, T* C, int ldc) {
    cuda::gemm<T>(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
  }

  static void* allocate(std::size_t bytes) { return cuda::device_allocator().take(bytes); }
  static void release(void* p, std::size_t bytes) { cuda::device_allocator().give(p, bytes); }
  static void zero(void* p, std::size_t bytes) {
    cuda::check_cuda(cudaMemsetAsync(p, 0, bytes), "cudaMemsetAsync");
  }
  static void to_host(void* host, const void* device, std::size_t bytes) {
    cuda::check_cuda(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  }
  static void to_device(void* device, const void* host, std::size_t bytes) {
    cuda::check_cuda(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  static void copy(void* to, const void* from, std::size_t bytes) {
    cuda::check_cuda(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpyAsync");
  }
  static void synchronize() { cuda::check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }
};

}  // namespace trident::backend
