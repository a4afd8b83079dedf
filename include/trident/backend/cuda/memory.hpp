// trident/backend/cuda/memory.hpp: device memory, cached (backend/caching_allocator.hpp) and
// counted (backend/device_buffer.hpp) like the host's Buffers.
//
// DeviceSource is cudaMalloc/cudaFree on the current device; cudaMalloc's out-of-memory is
// answered with nullptr (and its sticky error cleared) so that the cache can release its blocks
// and retry before the allocator raises the Error naming the device and the bytes asked for.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "../caching_allocator.hpp"
#include "device.hpp"
#include "error.hpp"

namespace trident::backend::cuda {

struct DeviceSource {
  void* allocate(std::size_t bytes) {
    void* p = nullptr;
    const cudaError_t code = cudaMalloc(&p, bytes);
    if (code == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    check_cuda(code, "cudaMalloc");
    return p;
  }
  void free(void* p) { cudaFree(p); }
  std::string name() const {
    int device = 0;
    cudaGetDevice(&device);
    return device_name(device);
  }
  // The device's own count: free and total bytes (other processes on it hold the rest).
  std::string state() const {
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
      cudaGetLastError();
      return "cudaMemGetInfo failed";
    }
    return std::to_string(free) + " bytes free of " + std::to_string(total) +
           " (cudaMemGetInfo; other processes, e.g. ranks sharing this GPU, hold the rest)";
  }
};

// The process's device allocator; never destroyed (buffers may be freed during static
// destruction, after the runtime's own teardown has begun).
inline CachingAllocator<DeviceSource>& device_allocator() {
  static auto* allocator = new CachingAllocator<DeviceSource>;
  return *allocator;
}

}  // namespace trident::backend::cuda
