// trident/core/memory.hpp: bytes held per kind, measured from the buffers themselves.
//
// Every buffer of model state or activations is a Buffer<T>, which reports its size to the
// process-wide MemoryStats under a kind when it is allocated and when it is freed. The ZeRO
// paper's accounting (parameters, gradients, optimizer states) and Korthikanti et al.'s
// activations are then read off real allocations, current and peak.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <type_traits>
#include <utility>

#include <sys/resource.h>

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
    if (c.current > c.step_peak) c.step_peak = c.current;
  }
  void release(MemoryKind k, std::size_t bytes) { counts_[static_cast<int>(k)].current -= bytes; }
  std::size_t current(MemoryKind k) const { return counts_[static_cast<int>(k)].current; }
  std::size_t peak(MemoryKind k) const { return counts_[static_cast<int>(k)].peak; }
  // Peaks restart from the current values (e.g. at the start of a measured step).
  void reset_peaks() {
    for (auto& c : counts_) c.peak = c.current;
  }
  // A second peak, of one training step (--metrics, io/metrics_log.hpp), restarted apart from
  // the first so that a run report's peaks span all its steps.
  std::size_t step_peak(MemoryKind k) const { return counts_[static_cast<int>(k)].step_peak; }
  void reset_step_peaks() {
    for (auto& c : counts_) c.step_peak = c.current;
  }

 private:
  struct Count {
    std::size_t current = 0, peak = 0, step_peak = 0;
  };
  std::array<Count, kMemoryKinds> counts_{};
};

inline MemoryStats& memory_stats() {
  static MemoryStats stats;
  return stats;
}

namespace detail {

// Freed Buffers' blocks, kept by size for the next Buffer of that size (a caching allocator,
// like PyTorch's for CUDA): a training step allocates the same activations and buffers every
// microbatch, and returning them to the system would make each step page-fault its memory in
// again. MemoryStats counts live Buffers only (PyTorch's "allocated", not "reserved").
// Bound: live plus cached bytes never exceed the high-water mark of live bytes. A block that
// must come from the system (no cached block of its size) first makes room by freeing cached
// blocks of other sizes, so the cache holds at most what the process has needed at once: the
// smallest block that makes room alone, else the largest and again (a small temporary then
// costs a small block, not the step's largest activation, faulted in again next step).
class BlockCache {
 public:
  static constexpr std::size_t kAlign = 64;  // a cache line, an AVX-512 vector

  // Never destroyed, so that Buffers freed during static destruction still find it.
  static BlockCache& instance() {
    static BlockCache* cache = new BlockCache;
    return *cache;
  }
  void* take(std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      live_ += bytes;
      auto it = free_.find(bytes);
      if (it != free_.end()) {
        void* p = it->second;
        free_.erase(it);
        cached_ -= bytes;
        return p;
      }
      peak_live_ = std::max(peak_live_, live_);
      while (live_ + cached_ > peak_live_) {
        auto it = free_.lower_bound(live_ + cached_ - peak_live_);  // alone enough room
        if (it == free_.end()) it = std::prev(free_.end());
        cached_ -= it->first;
        std::free(it->second);
        free_.erase(it);
      }
    }
    void* p = std::aligned_alloc(kAlign,
                                 std::max<std::size_t>(1, (bytes + kAlign - 1) / kAlign) * kAlign);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void give(void* p, std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_ -= bytes;
    free_.emplace(bytes, p);
    cached_ += bytes;
  }
  // Returns every cached block to the system.
  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [bytes, p] : free_) std::free(p);
    free_.clear();
    cached_ = 0;
  }
  std::size_t cached_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }
  // The most bytes live Buffers have held at once (the bound of live + cached).
  std::size_t peak_live_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_live_;
  }

 private:
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;
  std::size_t cached_ = 0, live_ = 0, peak_live_ = 0;
};

}  // namespace detail

// Bytes held by freed Buffers for reuse, and returning them to the system.
inline std::size_t cached_buffer_bytes() {
  return detail::BlockCache::instance().cached_bytes();
}
inline void release_cached_buffers() {
  detail::BlockCache::instance().release();
}
// The most bytes all live Buffers of this process have held at once.
inline std::size_t peak_live_buffer_bytes() {
  return detail::BlockCache::instance().peak_live_bytes();
}

// This process's peak resident set size (RSS) since it started, in bytes (getrusage; Linux
// reports kibibytes): what the system really gave it, buffers, code, MPI and all.
inline std::size_t peak_resident_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::size_t>(usage.ru_maxrss) * 1024;
}

// How a new Buffer starts: zeroed, or as it comes (for one that is overwritten at once, e.g.
// the output of an all-gather).
enum class Fill { zero, none };

namespace detail {
// Where a Buffer's bytes live: the host, through the BlockCache (64-byte aligned). A device
// backend (backend/cpu/cpu.hpp, backend/cuda/cuda.cuh) is another Memory with the same three
// calls and kHostMemory false.
struct HostMemory {
  static constexpr bool kHostMemory = true;
  static void* allocate(std::size_t bytes) { return BlockCache::instance().take(bytes); }
  static void release(void* p, std::size_t bytes) { BlockCache::instance().give(p, bytes); }
  static void zero(void* p, std::size_t bytes) { std::memset(p, 0, bytes); }
};
}  // namespace detail

// A counted, zero-initialised (unless Fill::none), contiguous array of T in Memory's bytes: its
// live bytes are added to memory_stats() under its kind, whatever the memory, so the ZeRO
// accounting reads the same numbers on every backend. Move-only; reset() frees it (into the
// memory's cache). Element access (operator[], fill) only where the bytes are host memory.
template <class T, class Memory = detail::HostMemory>
class BasicBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "Buffer holds plain numbers");

 public:
  BasicBuffer() = default;
  BasicBuffer(MemoryKind kind, std::size_t size, Fill fill = Fill::zero) {
    allocate(kind, size, fill);
  }
  BasicBuffer(BasicBuffer&& o) noexcept { *this = std::move(o); }
  BasicBuffer& operator=(BasicBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      kind_ = o.kind_;
    }
    return *this;
  }
  BasicBuffer(const BasicBuffer&) = delete;
  BasicBuffer& operator=(const BasicBuffer&) = delete;
  ~BasicBuffer() { reset(); }

  void allocate(MemoryKind kind, std::size_t size, Fill fill = Fill::zero) {
    reset();
    data_ = static_cast<T*>(Memory::allocate(size * sizeof(T)));
    if (fill == Fill::zero) Memory::zero(data_, size * sizeof(T));
    kind_ = kind;
    size_ = size;
    memory_stats().allocate(kind_, bytes());
  }
  void reset() {
    if (!data_) return;
    memory_stats().release(kind_, bytes());
    Memory::release(data_, bytes());
    data_ = nullptr;
    size_ = 0;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(T); }
  bool allocated() const { return data_ != nullptr; }
  MemoryKind kind() const { return kind_; }
  T& operator[](std::size_t i) {
    static_assert(Memory::kHostMemory, "operator[]: the buffer is in device memory");
    return data_[i];
  }
  const T& operator[](std::size_t i) const {
    static_assert(Memory::kHostMemory, "operator[]: the buffer is in device memory");
    return data_[i];
  }
  void fill(T value) {
    static_assert(Memory::kHostMemory, "fill: the buffer is in device memory");
    for (std::size_t i = 0; i < size_; ++i) data_[i] = value;
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  MemoryKind kind_ = MemoryKind::buffers;
};

// The host's Buffer: the one every layer, stash and optimizer state of the CPU path holds.
template <class T>
using Buffer = BasicBuffer<T>;

}  // namespace trident
