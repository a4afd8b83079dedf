// trident/zero/detail/gradient_window.hpp: a unit store's full gradients (ZeRO-0/1) in one shared
// window (core/shared_window.hpp), when the DP group shares a node and reduces after the backward
// (GradOverlap::at_end): unit i's padded gradient at offset i of this rank's array, the units one
// after the other. The reduction reads every rank's gradients where they lie
// (shm::reduce_in_window): no copy into the shared-memory segment first, and ZeRO-1's shards stay
// with their owners at their place in the unit, where the optimizer reads them.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "../../core/comm.hpp"
#include "../../core/memory.hpp"
#include "../../core/shared_window.hpp"

namespace trident::detail {

template <class S>
class GradientWindow {
 public:
  // Collective over dp (all on one node, with a shared-memory segment). padded: each unit's
  // padded size (a multiple of dp.size()).
  GradientWindow(const Comm& dp, const std::vector<std::size_t>& padded)
      : padded_(padded), rank_(dp.rank()) {
    std::size_t total = 0;
    for (std::size_t n : padded) offsets_.push_back(total), total += n;
    window_ = std::make_unique<SharedWindow>(dp.get(), total * sizeof(S));
    memory_stats().allocate(MemoryKind::gradients, window_->bytes());  // as a Buffer's would be
  }
  ~GradientWindow() { memory_stats().release(MemoryKind::gradients, window_->bytes()); }
  GradientWindow(const GradientWindow&) = delete;
  GradientWindow& operator=(const GradientWindow&) = delete;

  S* unit(int i) const { return window_->of<S>(rank_) + offsets_[i]; }
  void zero() const { std::fill_n(window_->of<S>(rank_), window_->bytes() / sizeof(S), S(0)); }

  // Units `which`, summed over dp in place: all-reduced (all), or each shard left summed with its
  // owner. Collective over dp, the same units on every rank.
  void reduce(const Comm& dp, const std::vector<int>& which, bool all) const {
    std::vector<shm::WindowRange> ranges;
    for (int i : which) ranges.push_back({offsets_[i], padded_[i]});
    dp.reduce_in_window<S>(*window_, ranges, all);
  }

 private:
  std::vector<std::size_t> padded_, offsets_;
  int rank_;
  std::unique_ptr<SharedWindow> window_;
};

}  // namespace trident::detail
