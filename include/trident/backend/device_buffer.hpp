// trident/backend/device_buffer.hpp: DeviceBuffer<T, B>, an array of T in backend B's memory,
// counted by MemoryStats exactly as the host's Buffer<T> (core/memory.hpp).
//
// The bytes of a live DeviceBuffer are added to memory_stats() under its kind when it is
// allocated and taken away when it is freed, so the ZeRO accounting reads the same numbers on
// every backend. Blocks come from B's caching allocator (the host's BlockCache for Cpu,
// cuda/memory.hpp's for Cuda). Move-only; the pointer is B's (a device pointer for Cuda).
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "../core/memory.hpp"

namespace trident::backend {

template <class T, class B>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "DeviceBuffer holds plain numbers");

 public:
  DeviceBuffer() = default;
  DeviceBuffer(MemoryKind kind, std::size_t size, Fill fill = Fill::zero) {
    allocate(kind, size, fill);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      kind_ = o.kind_;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }

  void allocate(MemoryKind kind, std::size_t size, Fill fill = Fill::zero) {
    reset();
    data_ = static_cast<T*>(B::allocate(size * sizeof(T)));
    if (fill == Fill::zero) B::zero(data_, size * sizeof(T));
    kind_ = kind;
    size_ = size;
    memory_stats().allocate(kind_, bytes());
  }
  void reset() {
    if (!data_) return;
    memory_stats().release(kind_, bytes());
    B::release(data_, bytes());
    data_ = nullptr;
    size_ = 0;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(T); }
  MemoryKind kind() const { return kind_; }

  // Host <-> device copies of the whole buffer (host: size() elements).
  void upload(const T* host) { B::to_device(data_, host, bytes()); }
  void download(T* host) const { B::to_host(host, data_, bytes()); }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  MemoryKind kind_ = MemoryKind::buffers;
};

}  // namespace trident::backend
