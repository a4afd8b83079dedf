// trident/backend/emulated/emulated.hpp: backend::Emulated, the CPU acting as a separate device.
//
// The interface of backend::Cpu (cpu/cpu.hpp), with the same kernels (each launch runs Cpu's
// loop over the same bodies, so a float run equals the CPU backend's bit for bit), but its
// memory is the guarded region of guarded_memory.hpp: host code cannot read or write it outside
// a launch, a GEMM or an explicit copy, and kHostMemory is false, so everything that crosses
// between host and device does so through the backend's copies and collectives take the
// host-staging path (backend/device_comm.hpp), as on a GPU that ranks share. What a GPU would
// only reveal at run time, wrongly placed memory, shows up here in the CPU tests
// (`--device emulated`). With TRIDENT_EMULATED_COLLECTIVES=nccl its collectives take the nccl
// path instead, on NCCL's semantics emulated over MPI (mpi_nccl.hpp: untagged in-order
// point-to-point, rendezvous sends, groups): what ranks on distinct GPUs run, on the CPU.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>

#include <cstdlib>

#include "../../core/error.hpp"
#include "../cpu/cpu.hpp"
#include "guarded_memory.hpp"
#include "mpi_nccl.hpp"

namespace trident::backend {

struct Emulated {
  static constexpr const char* kName = "emulated";
  static constexpr bool kHostMemory = false;
  static constexpr bool kHostKernels = true;
  static int column_width(int C) { return Cpu::column_width(C); }

  using Nccl = emulated::MpiNccl<Emulated>;

  // Every rank its own emulated device; collectives staged through the host, as on a GPU that
  // ranks share, or (TRIDENT_EMULATED_COLLECTIVES=nccl) on NCCL's semantics.
  static CollectivePath attach(const Comm&) {
    const char* env = std::getenv("TRIDENT_EMULATED_COLLECTIVES");
    const std::string path = env ? env : "staging";
    require(path == "staging" || path == "nccl",
            "TRIDENT_EMULATED_COLLECTIVES: expected staging or nccl, got '" + path + "'");
    return path == "nccl" ? CollectivePath::nccl : CollectivePath::host_staging;
  }
  static std::string device_name() { return emulated::GuardedRegion::instance().name(); }

  template <class Body>
  static void for_each(int n, const Body& body) {
    emulated::Launch launch;
    Cpu::for_each(n, body);
  }
  template <class Body>
  static void elementwise(Index n, const Body& body) {
    emulated::Launch launch;
    Cpu::elementwise(n, body);
  }
  template <class Body>
  static void grid(int rows, int cols, const Body& body) {
    emulated::Launch launch;
    Cpu::grid(rows, cols, body);
  }
  template <class F>
  static void host_kernel(F&& f) {
    emulated::Launch launch;
    f();
  }
  template <class T>
  static void gemm(bool trans_a, bool trans_b, int M, int N, int K, const T* A, int lda, const T* B,
                   int ldb, T beta, T* C, int ldc) {
    emulated::Launch launch;
    Cpu::gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
  }

  static void* allocate(std::size_t bytes) { return emulated::allocator().take(bytes); }
  static void release(void* p, std::size_t bytes) { emulated::allocator().give(p, bytes); }
  static void zero(void* p, std::size_t bytes) {
    emulated::Launch launch;
    if (bytes) std::memset(p, 0, bytes);
  }
  static void to_host(void* host, const void* device, std::size_t bytes) {
    emulated::Launch launch;
    Cpu::to_host(host, device, bytes);
  }
  static void to_device(void* device, const void* host, std::size_t bytes) {
    emulated::Launch launch;
    Cpu::to_device(device, host, bytes);
  }
  static void copy(void* to, const void* from, std::size_t bytes) {
    emulated::Launch launch;
    Cpu::copy(to, from, bytes);
  }
  static void synchronize() {}
};

}  // namespace trident::backend
