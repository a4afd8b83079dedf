// tests/all_to_all_testing.hpp: the pattern the all-to-all tests send (tests/test_comm.cpp):
// every rank knows what every rank sends, so each rank computes what it must receive.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include <trident/core/comm.hpp>

namespace trident::test::a2a {

// What rank s sends rank d in a group of p: uneven counts, zeros among them, and rank 1 sends
// nothing at all (when p > 1); `scale` makes the blocks span many rounds of a segment's buffer.
inline std::int64_t count(int s, int d, int p, std::int64_t scale) {
  if (p > 1 && s == 1) return 0;
  return scale * ((3 * s + 5 * d + 1) % 7);
}
// Element i of rank s's block for rank d: every bit a function of (s, d, i).
template <class T>
T value(int s, int d, std::int64_t i) {
  if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(1e3 * s + d + 1.0 / (3.0 + static_cast<double>(i)));
  else
    return static_cast<T>(1000000 * s + 10000 * d + i % 10000);
}

struct Pattern {
  AllToAllCounts send_counts, recv_counts;
};
inline Pattern pattern(int p, int r, std::int64_t scale) {
  Pattern q{AllToAllCounts(std::size_t(p)), AllToAllCounts(std::size_t(p))};
  for (int j = 0; j < p; ++j) {
    q.send_counts[j] = count(r, j, p, scale);
    q.recv_counts[j] = count(j, r, p, scale);
  }
  return q;
}
inline std::size_t total(const AllToAllCounts& c) {
  return static_cast<std::size_t>(std::accumulate(c.begin(), c.end(), std::int64_t(0)));
}

// Rank r's send buffer: its blocks in rank order, then `slack` elements that stay unsent.
template <class T>
std::vector<T> send_buffer(int p, int r, std::int64_t scale, std::size_t slack = 3) {
  std::vector<T> send;
  for (int d = 0; d < p; ++d)
    for (std::int64_t i = 0; i < count(r, d, p, scale); ++i) send.push_back(value<T>(r, d, i));
  send.resize(send.size() + slack, static_cast<T>(-5));
  return send;
}
// What rank r must receive: rank s's block for r, in rank order of s, then `slack` untouched
// elements (-7).
template <class T>
std::vector<T> expected(int p, int r, std::int64_t scale, std::size_t slack = 2) {
  std::vector<T> want;
  for (int s = 0; s < p; ++s)
    for (std::int64_t i = 0; i < count(s, r, p, scale); ++i) want.push_back(value<T>(s, r, i));
  want.resize(want.size() + slack, static_cast<T>(-7));
  return want;
}

// `n` bytes of address space whose memory is `period` bytes (a multiple of the page size)
// mapped again and again: byte x is byte x % period. A buffer past 2^31 elements that costs
// `period` bytes of memory and no first touch of gigabytes (slow on a virtual machine).
class Repeating {
 public:
  Repeating(std::size_t n, std::size_t period)
      : bytes_((n + period - 1) / period * period), fd_(memfd_create("trident-a2a", 0)) {
    require(fd_ >= 0 && ftruncate(fd_, static_cast<off_t>(period)) == 0, "memfd_create refused");
    base_ = static_cast<char*>(
        mmap(nullptr, bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    require(base_ != MAP_FAILED, "mmap of the address space refused");
    for (std::size_t at = 0; at < bytes_; at += period)
      require(mmap(base_ + at, period, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd_, 0) != MAP_FAILED,
              "mmap of a repeat refused");
  }
  ~Repeating() {
    munmap(base_, bytes_);
    close(fd_);
  }
  Repeating(const Repeating&) = delete;
  Repeating& operator=(const Repeating&) = delete;
  char* data() const { return base_; }

 private:
  std::size_t bytes_;
  int fd_;
  char* base_ = nullptr;
};

}  // namespace trident::test::a2a
