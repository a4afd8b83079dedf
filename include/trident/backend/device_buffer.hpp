// trident/backend/device_buffer.hpp: DeviceBuffer<T, B>, an array of T in backend B's memory,
// counted by MemoryStats exactly as the host's Buffer<T>: it is the same class
// (core/memory.hpp's BasicBuffer) with B as the memory. Blocks come from B's caching allocator
// (the host's BlockCache for Cpu, cuda/memory.hpp's for Cuda); the pointer is B's (a device
// pointer for Cuda), so elements are reached through kernels or the copies below.
#pragma once

#include "../core/memory.hpp"

namespace trident::backend {

template <class T, class B>
using DeviceBuffer = BasicBuffer<T, B>;

// Host <-> device copies of a whole buffer (host: d.size() elements).
template <class T, class B>
void upload(DeviceBuffer<T, B>& d, const T* host) {
  B::to_device(d.data(), host, d.bytes());
}
template <class T, class B>
void download(const DeviceBuffer<T, B>& d, T* host) {
  B::to_host(host, d.data(), d.bytes());
}

}  // namespace trident::backend
