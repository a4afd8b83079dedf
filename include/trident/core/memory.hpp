// trident/core/memory.hpp: bytes held per kind, measured from the buffers themselves.
//
// Every buffer of model state or activations is a Buffer<T>, which reports its size to the
// process-wide MemoryStats under a kind when it is allocated and when it is freed. The ZeRO
// paper's accounting (parameters, gradients, optimizer states) and Korthikanti et al.'s
// activations are then read off real allocations, current and peak.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace trident {

enum class MemoryKind { parameters, gradients, optimizer, activations, buffers };
inline constexpr int kMemoryKinds = 5;

inline const char* to_string(MemoryKind k) {
  constexpr const char* names[kMemoryKinds] = {"parameters", "gradients", "optimizer states",
                                               "activations", "communication buffers"};
  return names[static_cast<int>(k)];
}

class MemoryStats {
 public:
  void allocate(MemoryKind k, std::size_t bytes) {
    auto& c = counts_[static_cast<int>(k)];
    c.current += bytes;
    if (c.current > c.peak) c.peak = c.current;
  }
  void release(MemoryKind k, std::size_t bytes) { counts_[static_cast<int>(k)].current -= bytes; }
  std::size_t current(MemoryKind k) const { return counts_[static_cast<int>(k)].current; }
  std::size_t peak(MemoryKind k) const { return counts_[static_cast<int>(k)].peak; }
  // Peaks restart from the current values (e.g. at the start of a measured step).
  void reset_peaks() {
    for (auto& c : counts_) c.peak = c.current;
  }

 private:
  struct Count {
    std::size_t current = 0, peak = 0;
  };
  std::array<Count, kMemoryKinds> counts_{};
};

inline MemoryStats& memory_stats() {
  static MemoryStats stats;
  return stats;
}

// A counted, zero-initialised, contiguous array of T. Move-only; reset() frees it.
template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(MemoryKind kind, std::size_t size) { allocate(kind, size); }
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      data_ = std::move(o.data_);
      size_ = std::exchange(o.size_, 0);
      kind_ = o.kind_;
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  void allocate(MemoryKind kind, std::size_t size) {
    reset();
    kind_ = kind;
    size_ = size;
    data_.reset(new T[size]());
    memory_stats().allocate(kind_, bytes());
  }
  void reset() {
    if (!data_) return;
    memory_stats().release(kind_, bytes());
    data_.reset();
    size_ = 0;
  }

  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(T); }
  bool allocated() const { return data_ != nullptr; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  void fill(T value) {
    for (std::size_t i = 0; i < size_; ++i) data_[i] = value;
  }

 private:
  std::unique_ptr<T[]> data_;
  std::size_t size_ = 0;
  MemoryKind kind_ = MemoryKind::buffers;
};

}  // namespace trident
