// trident/backend/cuda/device.hpp: the GPUs this process sees, and the one it uses.
//
// visible_devices() asks the runtime (cudaGetDeviceCount) and keeps its reason when there are
// none (no driver, no device, CUDA_VISIBLE_DEVICES empty): a machine without a GPU is a normal
// answer here, not a failure. require_device() turns "none" into one trident::Error naming the
// device asked for and the reason, the same text on every rank.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "../../core/error.hpp"
#include "error.hpp"

namespace trident::backend::cuda {

struct VisibleDevices {
  int count = 0;
  std::string reason;  // why there are none (empty when count > 0)
};

inline VisibleDevices visible_devices() {
  int count = 0;
  const cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error for later calls
    return {0, "cudaGetDeviceCount: " + describe(code)};
  }
  if (count == 0) return {0, "cudaGetDeviceCount: 0 devices"};
  return {count, ""};
}

// "cuda:0 (NVIDIA H200)"
inline std::string device_name(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();
    return "cuda:" + std::to_string(device);
  }
  return "cuda:" + std::to_string(device) + " (" + prop.name + ")";
}

// The device's UUID as 32 hex digits: two ranks see the same GPU when their UUIDs are equal
// (device numbers differ under different CUDA_VISIBLE_DEVICES).
inline std::string device_uuid(int device) {
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (char byte : prop.uuid.bytes) {
    s += hex[(static_cast<unsigned char>(byte) >> 4) & 15];
    s += hex[static_cast<unsigned char>(byte) & 15];
  }
  return s;
}

// Selects device `device` (e.g. local rank % count) for this process; Error when none is visible.
inline int require_device(int device = 0) {
  const VisibleDevices v = visible_devices();
  if (v.count == 0)
    fail("device cuda: no CUDA device is visible to this process (" + v.reason +
         "); run on a machine with an NVIDIA GPU and its driver, or use the CPU");
  const int chosen = device % v.count;
  check_cuda(cudaSetDevice(chosen), "cudaSetDevice");
  return chosen;
}

}  // namespace trident::backend::cuda
