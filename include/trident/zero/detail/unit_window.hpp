// trident/zero/detail/unit_window.hpp: a unit store's full gradients (ZeRO-0/1) or parameters
// (ZeRO-1/2) in one shared window (core/shared_window.hpp), when the DP group shares a node and
// reduces after the backward (GradOverlap::at_end): unit i's padded array at offset i of this
// rank's array, the units one after the other. The DP collectives then work where the values
// lie, with nothing copied into the shared-memory segment first: the gradients' reduction reads
// every rank's gradients in place (shm::reduce_in_window), ZeRO-1's shards staying with their
// owners where the optimizer reads them; the parameters' all-gather writes each rank's updated
// shard into the others' arrays (shm::gather_in_window).
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "../../core/comm.hpp"
#include "../../core/memory.hpp"
#include "../../core/shared_window.hpp"

namespace trident::detail {

template <class S>
class UnitWindow {
 public:
  // Collective over dp (all on one node, with a shared-memory segment). padded: each unit's
  // padded size (a multiple of dp.size()); kind: what MemoryStats counts the window as.
  UnitWindow(const Comm& dp, const std::vector<std::size_t>& padded, MemoryKind kind)
      : padded_(padded), rank_(dp.rank()), kind_(kind) {
    std::size_t total = 0;
    for (std::size_t n : padded) {
      offsets_.push_back(total);
      total += n;
    }
    window_ = std::make_unique<SharedWindow>(dp.get(), total * sizeof(S));
    memory_stats().allocate(kind_, window_->bytes());  // as a Buffer's would be
  }
  ~UnitWindow() { memory_stats().release(kind_, window_->bytes()); }
  UnitWindow(const UnitWindow&) = delete;
  UnitWindow& operator=(const UnitWindow&) = delete;

  S* unit(int i) const { return window_->of<S>(rank_) + offsets_[i]; }
  void zero() const { std::fill_n(window_->of<S>(rank_), window_->bytes() / sizeof(S), S(0)); }

  // Units `which`, summed over dp in place: all-reduced (all), or each shard left summed with its
  // owner. Collective over dp, the same units on every rank.
  void reduce(const Comm& dp, const std::vector<int>& which, bool all) const {
    dp.reduce_in_window<S>(*window_, ranges(which), all);
  }
  // Every unit all-gathered over dp in place: each rank's shard of each unit into every rank's
  // array. Collective over dp.
  void gather(const Comm& dp) const {
    std::vector<int> all(padded_.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    dp.gather_in_window<S>(*window_, ranges(all));
  }

 private:
  std::vector<shm::WindowRange> ranges(const std::vector<int>& which) const {
    std::vector<shm::WindowRange> r;
    for (int i : which) r.push_back({offsets_[i], padded_[i]});
    return r;
  }

  std::vector<std::size_t> padded_, offsets_;
  int rank_;
  MemoryKind kind_;
  std::unique_ptr<SharedWindow> window_;
};

}  // namespace trident::detail
