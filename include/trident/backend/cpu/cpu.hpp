// trident/backend/cpu/cpu.hpp: backend::Cpu, the CPU as a backend type.
//
// A backend type is what the whole stack is written against (nn/'s layers, tp/, the decoder
// stage, the ZeRO store, the pipeline executor, the trainer: docs/ARCHITECTURE.md §4.1), chosen
// at compile time as a template parameter B:
//   kName                     the device's name in messages and reports
//   kHostMemory               whether host code may read and write its memory (MPI can)
//   kHostKernels              whether its kernels are host code: then a layer may run a fused
//                             CPU kernel of its own as one launch (host_kernel), e.g. attention
//   column_width(C)           columns per call of a column body (a sum over rows per column)
//   attach(world)             binds this rank to its device; the CollectivePath of the run
//   device_name()             "cpu", "emulated device (...)", "cuda:0 (NVIDIA H200)"
//   for_each(n, body)         body(i) for i in [0, n), in parallel: a kernel launch
//   elementwise(n, body)      the same for independent elements (a SIMD loop on the CPU);
//                             n and i are Index (64-bit: host_device.hpp)
//   grid(rows, cols, body)    body(i, j) for the elements of a matrix (SIMD along a row;
//                             rows * cols may pass 2^31)
//   host_kernel(f)            f() as one launch (kHostKernels backends only)
//   gemm(...)                 C = op(A) op(B) + beta C, row-major strided (backend::gemm)
//   allocate / release / zero memory, counted by DeviceBuffer (core/memory.hpp)
//   to_host / to_device / copy, synchronize
// Cpu runs everything on host memory with OpenMP and the BLAS; backend::Emulated
// (emulated/emulated.hpp) is the CPU acting as a separate, guarded device; backend::Cuda
// (cuda/cuda.cuh) is an NVIDIA GPU.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "../../core/memory.hpp"
#include "../collective_path.hpp"
#include "../host_device.hpp"
#include "gemm.hpp"

namespace trident::backend {

// allocate, release, zero and kHostMemory: the host's Buffer memory (core/memory.hpp).
struct Cpu : trident::detail::HostMemory {
  static constexpr const char* kName = "cpu";
  static constexpr bool kHostKernels = true;
  // A column body's columns: one block per thread, whole SIMD chunks of 16, so that each
  // thread walks the rows once (several narrow blocks per thread would walk them again each).
  static int column_width(int C) {
    int threads = 1;
#ifdef _OPENMP
    threads = omp_in_parallel() ? 1 : omp_get_max_threads();
#endif
    const int w = (C + threads - 1) / threads;
    return std::max(16, (w + 15) / 16 * 16);
  }

  static CollectivePath attach(const Comm&) {
    return CollectivePath::mpi;
  }
  static std::string device_name() {
    return "cpu";
  }

  template <class Body>
  static void for_each(int n, const Body& body) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; ++i) body(i);
  }
  // (SIMD loops over a body: each thread's own copy, whose members are then locals; through a
  // reference GCC 12 loads the body's rows by gathers: nn/column_blocks.hpp)
  template <class Body>
  static void elementwise(Index n, const Body& body) {
#pragma omp parallel
    {
      const Body b = body;
#pragma omp for simd schedule(static)
      for (Index i = 0; i < n; ++i) b(i);
    }
  }
  template <class Body>
  static void grid(int rows, int cols, const Body& body) {
#pragma omp parallel
    {
      const Body b = body;
#pragma omp for schedule(static)
      for (int i = 0; i < rows; ++i) {
#pragma omp simd
        for (int j = 0; j < cols; ++j) b(i, j);
      }
    }
  }
  template <class F>
  static void host_kernel(F&& f) {
    f();
  }

  // C: (M, N) = op(A) op(B) + beta C; rows lda, ldb, ldc elements apart.
  template <class T>
  static void gemm(bool trans_a, bool trans_b, int M, int N, int K, const T* A, int lda, const T* B,
                   int ldb, T beta, T* C, int ldc) {
    backend::gemm<T>(view(C, M, N, ldc), cview(A, trans_a ? K : M, trans_a ? M : K, lda),
                     cview(B, trans_b ? N : K, trans_b ? K : N, ldb), trans_a, trans_b, beta);
  }

  // (a null pointer with bytes: nothing; only reachable on paths the caller's flags exclude,
  // e.g. SP's gathered buffer passed as null without SP)
  static void to_host(void* host, const void* device, std::size_t bytes) {
    if (bytes && host && device) std::memcpy(host, device, bytes);
  }
  static void to_device(void* device, const void* host, std::size_t bytes) {
    if (bytes && host && device) std::memcpy(device, host, bytes);
  }
  static void copy(void* to, const void* from, std::size_t bytes) {
    if (bytes && to && from && to != from) std::memmove(to, from, bytes);
  }
  static void synchronize() {}
};

}  // namespace trident::backend
