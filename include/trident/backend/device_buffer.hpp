// trident/backend/device_buffer.hpp: DeviceBuffer<T, B>, an array of T in backend B's memory,
// counted by MemoryStats exactly as the host's Buffer<T>: it is the same class
// (core/memory.hpp's BasicBuffer) with B as the memory. Blocks come from B's caching allocator
// (the host's BlockCache for Cpu, the guarded region's for Emulated, cuda/memory.hpp's for
// Cuda); the pointer is B's, so elements are reached through kernels or the copies below.
//
// upload and download are the stack's host <-> device crossings (token ids in, losses and the
// gradient norm's sums out), counted in crossings() so that a test can hold the stack to its
// budget (docs/ARCHITECTURE.md §4.1: once per microbatch or step). Host staging of collectives
// (device_comm.hpp) and checkpoints copy with B's own calls and are not counted here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "../core/memory.hpp"

namespace trident::backend {

template <class T, class B>
using DeviceBuffer = BasicBuffer<T, B>;

// Host <-> device crossings of this process: calls and bytes each way.
struct Crossings {
  std::uint64_t uploads = 0, downloads = 0, upload_bytes = 0, download_bytes = 0;
};
inline Crossings& crossings() {
  static Crossings c;
  return c;
}

// device: (n) <- host: (n); host -> device, counted.
template <class B, class T>
void upload(T* device, const T* host, std::size_t n) {
  crossings().uploads += 1;
  crossings().upload_bytes += n * sizeof(T);
  B::to_device(device, host, n * sizeof(T));
}
// host: (n) <- device: (n); device -> host, counted.
template <class B, class T>
void download(T* host, const T* device, std::size_t n) {
  crossings().downloads += 1;
  crossings().download_bytes += n * sizeof(T);
  B::to_host(host, device, n * sizeof(T));
}
// A whole buffer (host: d.size() elements).
template <class T, class B>
void upload(DeviceBuffer<T, B>& d, const T* host) {
  upload<B>(d.data(), host, d.size());
}
template <class T, class B>
void download(const DeviceBuffer<T, B>& d, T* host) {
  download<B>(host, d.data(), d.size());
}

// Uncounted copies for what is staged through the host outside the step (initial values,
// checkpoints, weights, tests): n elements of B's memory at `device`.
template <class B, class T>
std::vector<std::remove_const_t<T>> host_copy(const T* device, std::size_t n) {
  std::vector<std::remove_const_t<T>> host(n);
  B::to_host(host.data(), device, n * sizeof(T));
  return host;
}
template <class B, class T>
void copy_from_host(T* device, const T* host, std::size_t n) {
  B::to_device(device, host, n * sizeof(T));
}

}  // namespace trident::backend
