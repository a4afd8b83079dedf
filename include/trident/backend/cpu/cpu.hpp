// trident/backend/cpu/cpu.hpp: backend::Cpu, the CPU as a backend type.
//
// A backend type is what device code is written against (backend/kernels/, device_buffer.hpp,
// collectives.hpp), chosen at compile time as a template parameter:
//   kName                       the device's name in messages and reports
//   kHostMemory                 whether its pointers are host memory (MPI can read them)
//   for_each(n, body)           body(i) for i in [0, n), in parallel (a kernel launch)
//   gemm(...)                   C = op(A) op(B) + beta C, row-major strided (backend::gemm)
//   allocate / release          counted by DeviceBuffer, cached as the host's Buffers
//   zero, to_host, to_device, copy, synchronize
// backend::Cuda (cuda/cuda.cuh) is the other one. Cpu runs every kernel body in an OpenMP loop
// over host memory: the host-side tests of the kernels use it.
#pragma once

#include <cstddef>
#include <cstring>

#include "../../core/memory.hpp"
#include "gemm.hpp"

namespace trident::backend {

// allocate, release, zero and kHostMemory: the host's Buffer memory (core/memory.hpp).
struct Cpu : trident::detail::HostMemory {
  static constexpr const char* kName = "cpu";

  template <class Body>
  static void for_each(int n, const Body& body) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; ++i) body(i);
  }

  // C: (M, N) = op(A) op(B) + beta C; rows lda, ldb, ldc elements apart.
  template <class T>
  static void gemm(bool trans_a, bool trans_b, int M, int N, int K, const T* A, int lda, const T* B,
                   int ldb, T beta, T* C, int ldc) {
    backend::gemm<T>(view(C, M, N, ldc), cview(A, trans_a ? K : M, trans_a ? M : K, lda),
                     cview(B, trans_b ? N : K, trans_b ? K : N, ldb), trans_a, trans_b, beta);
  }

  static void to_host(void* host, const void* device, std::size_t bytes) {
    std::memcpy(host, device, bytes);
  }
  static void to_device(void* device, const void* host, std::size_t bytes) {
    std::memcpy(device, host, bytes);
  }
  static void copy(void* to, const void* from, std::size_t bytes) {
    std::memcpy(to, from, bytes);
  }
  static void synchronize() {}
};

}  // namespace trident::backend
