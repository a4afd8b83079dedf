// trident/backend/caching_allocator.hpp: CachingAllocator<Source>, freed device blocks kept by
// size for the next allocation of that size (as PyTorch's CUDA caching allocator: cudaMalloc and
// cudaFree synchronise the device and cost far more than a training step's reuse).
//
// Source is where blocks really come from: allocate(bytes) returns nullptr when the device is
// out of memory, free(p) gives one back, name() names the device ("cuda:0 (NVIDIA H200)"), and
// state() (optional) says what the device itself reports (a GPU's free and total bytes: other
// processes, e.g. ranks sharing the GPU, hold the rest).
// Sizes are rounded up to kGranule. When the source refuses, every cached block is returned
// and the allocation retried once; when it refuses again, a DeviceOutOfMemory (a trident::Error)
// names the device, the bytes asked for, the bytes held and what holds them: the live buffers
// of this process by kind (MemoryStats). The counts of MemoryStats are DeviceBuffer's (live
// bytes, as on the host); this class only reports live and cached bytes for the message.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "../core/error.hpp"
#include "../core/memory.hpp"

namespace trident::backend {

// A device allocation refused for want of memory: this rank's alone (the trainer agrees on it
// over the ranks where it can, while building the model states; elsewhere run_main ends the job).
class DeviceOutOfMemory : public RankError {
 public:
  using RankError::RankError;
};

template <class Source>
class CachingAllocator {
  template <class S, class = void>
  struct has_state : std::false_type {};
  template <class S>
  struct has_state<S, std::void_t<decltype(std::declval<const S&>().state())>> : std::true_type {};
  static constexpr bool kHasState = has_state<Source>::value;

 public:
  static constexpr std::size_t kGranule = 512;

  explicit CachingAllocator(Source source = {}) : source_(std::move(source)) {}
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;
  ~CachingAllocator() { release_cached(); }

  static std::size_t rounded(std::size_t bytes) {
    return (bytes == 0 ? 1 : (bytes + kGranule - 1) / kGranule) * kGranule;
  }

  void* take(std::size_t bytes) {
    const std::size_t size = rounded(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(size);
    if (it != free_.end()) {
      void* p = it->second;
      free_.erase(it);
      cached_ -= size;
      live_ += size;
      return p;
    }
    void* p = source_.allocate(size);
    if (!p && cached_ > 0) {
      const std::size_t released = cached_;
      release_cached_locked();
      p = source_.allocate(size);
      if (!p) out_of_memory(bytes, released);
    }
    if (!p) out_of_memory(bytes, 0);
    live_ += size;
    return p;
  }
  void give(void* p, std::size_t bytes) {
    const std::size_t size = rounded(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    live_ -= size;
    cached_ += size;
    free_.emplace(size, p);
  }
  void release_cached() {
    std::lock_guard<std::mutex> lock(mutex_);
    release_cached_locked();
  }
  std::size_t live_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_;
  }
  std::size_t cached_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }
  Source& source() { return source_; }

 private:
  void release_cached_locked() {
    for (auto& [size, p] : free_) source_.free(p);
    free_.clear();
    cached_ = 0;
  }
  [[noreturn]] void out_of_memory(std::size_t bytes, std::size_t released) const {
    std::string held;
    for (int k = 0; k < kMemoryKinds; ++k)
      held += std::string(k ? ", " : "") + to_string(MemoryKind(k)) + " " +
              std::to_string(memory_stats().current(MemoryKind(k)));
    std::string device;
    if constexpr (kHasState) device = "; the device: " + source_.state();
    throw DeviceOutOfMemory(
        source_.name() + ": out of memory: asked for " + std::to_string(bytes) + " bytes, " +
        std::to_string(live_) +
        " bytes held by live buffers (this process's buffers by kind, bytes: " + held + ")" +
        device +
        (released ? "; " + std::to_string(released) + " cached bytes were released first"
                  : std::string()));
  }

  Source source_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;
  std::size_t live_ = 0, cached_ = 0;
};

}  // namespace trident::backend
