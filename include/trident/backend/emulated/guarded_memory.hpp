// trident/backend/emulated/guarded_memory.hpp: the emulated device's memory — host memory that
// host code cannot touch outside a kernel launch or an explicit copy.
//
// One region of address space is reserved at the first allocation (mmap, PROT_NONE; its size is
// the device's capacity: TRIDENT_EMULATED_MEMORY, in bytes with an optional K, M or G, default
// 16G; pages are committed only when written). Buffers are cut from it by a bump pointer, blocks
// given back are reused (the caching allocator keeps them by size, as a GPU's does). Between
// launches the whole used part of the region is PROT_NONE: a host read or write of device
// memory faults at once, and a SIGSEGV handler names it before the process dies, where on a GPU
// the same bug would read garbage or fault far from its cause. A launch (Launch, RAII; nested
// launches count) makes the used part readable and writable for its duration: two mprotect
// calls per launch, over whole 2 MiB huge pages where the kernel gives them (madvise
// MADV_HUGEPAGE: a change of protection then rewrites one entry per 2 MiB, not 512; measured,
// `mpiexec -n 2 train_gpt --tp 2 --dtype double --device emulated`: 748 tokens/s with 4 KiB
// pages, 10,307 with huge pages, the CPU backend 12,380). Launches come from the rank's
// main thread (OpenMP threads run inside them).
#pragma once

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "../../core/error.hpp"
#include "../caching_allocator.hpp"

namespace trident::backend::emulated {

// TRIDENT_EMULATED_MEMORY: "1073741824", "512M", "16G"; the capacity in bytes.
inline std::size_t parse_capacity(const char* text) {
  const std::string what = std::string("TRIDENT_EMULATED_MEMORY='") + text + "'";
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  double unit = 1;
  if (*end == 'K' || *end == 'k') {
    unit = 1024.0;
    ++end;
  }
  if (*end == 'M' || *end == 'm') {
    unit = 1024.0 * 1024;
    ++end;
  }
  if (*end == 'G' || *end == 'g') {
    unit = 1024.0 * 1024 * 1024;
    ++end;
  }
  require(end != text && *end == '\0' && value > 0 && value * unit < 1e15,
          what + ": expected a size in bytes, e.g. 512M or 16G");
  return static_cast<std::size_t>(value * unit);
}

class GuardedRegion {
 public:
  static constexpr std::size_t kAlign = 256;
  static constexpr std::size_t kProtectUnit = std::size_t(2) << 20;  // a huge page

  // Never destroyed: buffers may be freed during static destruction.
  static GuardedRegion& instance() {
    static GuardedRegion* region = new GuardedRegion;
    return *region;
  }

  std::size_t capacity() const { return capacity_; }
  bool contains(const void* p) const {
    const char* c = static_cast<const char*>(p);
    return base_ && c >= base_ && c < base_ + capacity_;
  }
  std::size_t offset(const void* p) const { return static_cast<const char*>(p) - base_; }
  bool in_launch() const { return depth_ > 0; }

  // The source of the caching allocator: nullptr when the region is full.
  void* allocate(std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    reserve();
    auto it = returned_.lower_bound(bytes);
    if (it != returned_.end() && it->first <= 2 * bytes) {  // a returned block that fits
      char* p = it->second;
      sizes_[p] = it->first;
      returned_.erase(it);
      return p;
    }
    const std::size_t size = (bytes + kAlign - 1) / kAlign * kAlign;
    if (top_ + size > capacity_) return nullptr;
    char* p = base_ + top_;
    const std::size_t old_end = page_end(top_);
    top_ += size;
    if (depth_ > 0 && page_end(top_) > old_end) protect(old_end, page_end(top_), true);
    sizes_[p] = size;
    return p;
  }
  void free(void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(static_cast<char*>(p));
    if (it == sizes_.end()) return;
    returned_.emplace(it->second, it->first);
    sizes_.erase(it);
  }
  std::string name() const {
    return "emulated device (" + std::to_string(capacity_) + " bytes, TRIDENT_EMULATED_MEMORY)";
  }
  // What the caching allocator's out-of-memory message adds: the region's use.
  std::string state() const {
    return std::to_string(top_) + " of its " + std::to_string(capacity_) + " bytes handed out";
  }

  // Installs the SIGSEGV handler that names a host access to the region (done when the region
  // is reserved; a program that installs its own handler afterwards may install it again: the
  // handler calls the one it replaced).
  static void install_fault_report();

  // A kernel launch or copy begins (the used region becomes readable and writable) or ends.
  void open() {
    if (depth_++ == 0 && top_ > 0) protect(0, page_end(top_), true);
  }
  void close() {
    if (--depth_ == 0 && top_ > 0) protect(0, page_end(top_), false);
  }

 private:
  GuardedRegion() {
    const char* env = std::getenv("TRIDENT_EMULATED_MEMORY");
    capacity_ = env && *env ? parse_capacity(env) : (std::size_t(16) << 30);
    page_ = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    capacity_ = (capacity_ + page_ - 1) / page_ * page_;
  }
  // The region, reserved at the first allocation (collective-free: each process its own).
  void reserve() {
    if (base_) return;
    void* p =
        mmap(nullptr, capacity_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    require(p != MAP_FAILED, "emulated device: cannot reserve " + std::to_string(capacity_) +
                                 " bytes of address space (TRIDENT_EMULATED_MEMORY)");
    base_ = static_cast<char*>(p);
    madvise(base_, capacity_, MADV_HUGEPAGE);  // a hint: without it, 4 KiB pages
    install_fault_report();
  }
  // The end of the protected range around [0, offset): whole huge pages, within the region.
  std::size_t page_end(std::size_t offset) const {
    const std::size_t end = (offset + kProtectUnit - 1) / kProtectUnit * kProtectUnit;
    return end < capacity_ ? end : capacity_;
  }
  void protect(std::size_t from, std::size_t to, bool open) const {
    if (to <= from) return;
    if (mprotect(base_ + from, to - from, open ? PROT_READ | PROT_WRITE : PROT_NONE) != 0)
      fail("emulated device: mprotect failed on " + std::to_string(to - from) + " bytes");
  }

  char* base_ = nullptr;
  std::size_t capacity_ = 0, top_ = 0, page_ = 4096;
  int depth_ = 0;
  std::map<char*, std::size_t> sizes_;          // live blocks of the source
  std::multimap<std::size_t, char*> returned_;  // blocks the cache gave back
  std::mutex mutex_;
};

namespace detail {
inline struct sigaction& previous_handler() {
  static struct sigaction previous {};
  return previous;
}
// Async-signal-safe: write(2) of a fixed text and a number, then the default action.
inline void write_text(const char* s) {
  std::size_t n = 0;
  while (s[n]) ++n;
  [[maybe_unused]] const ssize_t w = write(2, s, n);
}
inline void report_fault(int sig, siginfo_t* info, void* context) {
  GuardedRegion& r = GuardedRegion::instance();
  if (info && r.contains(info->si_addr) && !r.in_launch()) {
    char digits[24];
    int k = 23;
    digits[k] = '\0';
    std::size_t off = r.offset(info->si_addr);
    do {
      digits[--k] = char('0' + off % 10);
      off /= 10;
    } while (off && k > 0);
    write_text("trident: host code read or wrote emulated device memory (byte ");
    write_text(digits + k);
    write_text(
        " of the device) outside a kernel launch or an explicit copy: device memory is "
        "reached only through the backend (docs/ARCHITECTURE.md 4.1)\n");
  }
  struct sigaction& prev = previous_handler();
  if (prev.sa_flags & SA_SIGINFO && prev.sa_sigaction) return prev.sa_sigaction(sig, info, context);
  signal(sig, prev.sa_handler == SIG_IGN ? SIG_DFL : prev.sa_handler);  // returns: it re-faults
}
}  // namespace detail

inline void GuardedRegion::install_fault_report() {
  struct sigaction action {};
  action.sa_sigaction = &detail::report_fault;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, &detail::previous_handler());
}

// The emulated device's allocator: blocks kept by size (as a GPU's), out of memory an Error.
struct RegionSource {
  void* allocate(std::size_t bytes) { return GuardedRegion::instance().allocate(bytes); }
  void free(void* p) { GuardedRegion::instance().free(p); }
  std::string name() const { return GuardedRegion::instance().name(); }
  std::string state() const { return GuardedRegion::instance().state(); }
};
inline CachingAllocator<RegionSource>& allocator() {
  static auto* a = new CachingAllocator<RegionSource>;
  return *a;
}

// A launch or copy: device memory readable and writable while it lives.
class Launch {
 public:
  Launch() { GuardedRegion::instance().open(); }
  ~Launch() { GuardedRegion::instance().close(); }
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;
};

}  // namespace trident::backend::emulated
