// trident/zero/detail/unit_gradients.hpp: a unit store's gradients (unit_store.hpp) and their
// DP reduction, as the ZeRO policy (policy.hpp) asks, on a backend B: the full gradient a unit's
// backward accumulates into, the owned shard of the reduced gradient (stages 2, 3), and the
// reductions in flight.
//
// A unit's reduction is launched, nonblocking, when its backward is done, and overlaps the
// backward of the units before it; or (GradOverlap::at_end) it is left for finish(), which runs
// it blocking, in place when the full gradients lie in a shared window (unit_window.hpp). A
// shard's per-microbatch sums (stages 2, 3) are added in launch order, whatever order the
// requests complete in, so a run repeats bit for bit; a unit has at most one reduction in flight,
// so the full-size copies in flight never exceed one gradient (DeepSpeed's overlap_comm bounds
// its buckets likewise).
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../backend/device_buffer.hpp"
#include "../../backend/device_comm.hpp"
#include "../../backend/ops.hpp"
#include "../../core/memory.hpp"
#include "../policy.hpp"
#include "unit_window.hpp"

namespace trident::detail {

template <class T, class S, class B>
class UnitGradients {
  static constexpr bool kSameType = std::is_same_v<T, S>;
  static constexpr bool kWindowed = kSameType && std::is_floating_point_v<S> && B::kHostMemory;
  template <class V>
  using Buf = backend::DeviceBuffer<V, B>;

 public:
  UnitGradients() = default;
  // padded: each unit's padded size, a multiple of dp's size. in_window: the full gradients lie
  // in one shared window (collective over dp), reduced in place.
  UnitGradients(ZeroPolicy policy, const backend::DeviceComm<B>& dp,
                const std::vector<std::size_t>& padded, bool in_window)
      : policy_(policy), dp_(dp) {
    for (std::size_t n : padded) {
      units_.emplace_back();
      units_.back().padded = n;
      units_.back().shard = n / dp.size();
    }
    if constexpr (kWindowed)
      if (in_window)
        window_ = std::make_unique<UnitWindow<S>>(dp.comm(), padded, MemoryKind::gradients);
  }

  // Unit i's buffers for the step: the full gradient (kept whole: stages 0, 1) and the owned
  // shard of the reduced one (stages 2, 3).
  void allocate(int i) {
    Unit& u = units_[i];
    if (!policy_.shards_gradients() && !window_) u.full.allocate(MemoryKind::gradients, u.padded);
    if (policy_.shards_gradients()) u.owned.allocate(MemoryKind::gradients, u.shard);
  }

  // The T buffer that unit i's backward accumulates into (+=) for the current microbatch.
  T* grads(int i) {
    if constexpr (kWindowed)
      if (window_) return window_->unit(i);
    Unit& u = units_[i];
    if (policy_.full_gradients() && !u.full.allocated())
      u.full.allocate(MemoryKind::gradients, u.padded);  // stage 2/3 per step: for this step
    if constexpr (kSameType)
      if (policy_.full_gradients()) return u.full.data();
    if (!u.scratch.allocated()) u.scratch.allocate(MemoryKind::buffers, u.padded);
    return u.scratch.data();
  }

  // Unit i's backward for this microbatch is done; last: it was the step's last microbatch.
  void launch(int i, bool last) {
    Unit& u = units_[i];
    if (u.scratch.allocated() && policy_.full_gradients()) {  // mixed precision: accumulate in S
      backend::accumulate<B>(u.full.data(), u.scratch.data(), u.padded);
      u.scratch.reset();
    }
    if (policy_.full_gradients()) {
      if (last) reduce_full(i);
      return;
    }
    // per microbatch: reduce-scatter this microbatch's gradient, then add the owned shard into
    // the unit's gradient shard and free the full copy; the unit's previous reduction first
    finish_reductions_up_to(i);
    auto full = std::make_shared<Buf<S>>();
    if constexpr (kSameType) {
      *full = std::move(u.scratch);
    } else {
      full->allocate(MemoryKind::buffers, u.padded, Fill::none);
      backend::convert<B>(full->data(), u.scratch.data(), u.padded);
      u.scratch.reset();
    }
    backend::DeviceRequest r = dp_.ireduce_scatter_in_place(full->data(), u.padded);
    pending_.push_back({std::move(r),
                        [this, i, full] {
                          Unit& v = units_[i];
                          backend::accumulate<B>(v.owned.data(), full->data(), v.shard);
                        },
                        i});
  }

  // Finishes, in launch order, the pending reductions up to unit i's (none when i has none).
  void finish_reductions_up_to(int i) {
    std::size_t last = pending_.size();
    for (std::size_t k = 0; k < pending_.size(); ++k)
      if (pending_[k].unit == i && pending_[k].done) last = k;
    for (std::size_t k = 0; last < pending_.size() && k <= last; ++k) {
      pending_[k].request.wait();
      if (pending_[k].done) std::exchange(pending_[k].done, nullptr)();
    }
  }

  // Lets outstanding reductions progress (MPI progresses inside MPI calls) and adds the
  // completed ones into their shards in launch order: a later microbatch's sum never goes in
  // before an earlier one's (float addition is not associative).
  void poll() {
    for (Pending& p : pending_) {
      if (!p.done) continue;  // applied, or nothing to apply
      if (!p.request.test()) return;
      std::exchange(p.done, nullptr)();
    }
  }

  // Runs the reductions left for the end (blocking, unit by unit in launch order) and waits for
  // every other.
  void finish() {
    if constexpr (kWindowed) {
      if (window_ && !at_end_.empty()) {  // in place, no copy in
        window_->reduce(dp_.comm(), at_end_, policy_.all_reduces_gradients());
        at_end_.clear();
      }
    }
    for (int i : at_end_) reduce_now(i);
    at_end_.clear();
    for (Pending& p : pending_) {
      p.request.wait();
      if (p.done) p.done();
    }
    pending_.clear();
  }

  // The DP-reduced gradient of the elements this rank owns: the whole unit, all-reduced
  // (stage 0), this rank's shard of the full gradient (stage 1) or the owned shard (2, 3).
  Span<S> reduced(int i) {
    Unit& u = units_[i];
    if (policy_.all_reduces_gradients()) return Span<S>(full_grads(i), u.padded);
    if (!policy_.shards_gradients()) return Span<S>(full_grads(i) + shard_begin(i), u.shard);
    return Span<S>(u.owned.data(), u.shard);
  }

  // Start of a step: every gradient to zero.
  void begin_step() {
    if constexpr (kWindowed)
      if (window_) window_->zero();
    for (Unit& u : units_) {
      if (u.full.allocated()) B::zero(u.full.data(), u.full.bytes());
      if (u.owned.allocated()) B::zero(u.owned.data(), u.owned.bytes());
    }
  }
  // End of a step: the full gradients of stages 2 and 3 (reducing per step) freed.
  void end_step() {
    if (policy_.shards_gradients())
      for (Unit& u : units_) u.full.reset();
  }

 private:
  struct Unit {
    std::size_t padded = 0, shard = 0;
    Buf<S> full;     // full gradient (stages 0, 1; 2 and 3 per step)
    Buf<S> owned;    // stages 2, 3: the owned shard of the reduced gradient
    Buf<T> scratch;  // the backward's T copy (mixed precision; stages 2, 3 per microbatch)
  };
  struct Pending {
    backend::DeviceRequest request;
    std::function<void()> done;  // null once applied, or with nothing to apply
    int unit = -1;
  };

  std::size_t shard_begin(int i) const { return dp_.rank() * units_[i].shard; }
  // The full gradient of unit i: in the window or not.
  S* full_grads(int i) {
    if constexpr (kWindowed)
      if (window_) return window_->unit(i);
    return units_[i].full.data();
  }

  // Reduction of a full gradient after the last microbatch: all-reduce (stage 0), or
  // reduce-scatter in place, the result moved to where the stage keeps it (place_reduced_shard).
  // at_end: left for finish (reduce_now).
  void reduce_full(int i) {
    if (policy_.overlap == GradOverlap::at_end) {
      at_end_.push_back(i);
      return;
    }
    Unit& u = units_[i];
    if (policy_.all_reduces_gradients()) {
      pending_.push_back({dp_.iall_reduce(full_grads(i), u.padded), nullptr, i});
      return;
    }
    pending_.push_back({dp_.ireduce_scatter_in_place(full_grads(i), u.padded),
                        [this, i] { place_reduced_shard(i, full_grads(i)); }, i});
  }
  // The same reduction, blocking (the shared-memory path where the group has one).
  void reduce_now(int i) {
    Unit& u = units_[i];
    if (policy_.all_reduces_gradients()) return dp_.all_reduce(full_grads(i), u.padded);
    Buf<S> shard(MemoryKind::buffers, u.shard, Fill::none);  // the reduce-scatter writes it
    dp_.reduce_scatter(full_grads(i), shard.data(), u.shard);
    place_reduced_shard(i, shard.data());
  }
  // This rank's reduced shard to where the stage keeps it: the owner's position in the full
  // gradient (stage 1), or the owned shard with the full copy freed (stages 2, 3 per step).
  void place_reduced_shard(int i, const S* reduced) {
    Unit& u = units_[i];
    if (!policy_.shards_gradients()) {
      B::copy(full_grads(i) + shard_begin(i), reduced, u.shard * sizeof(S));
    } else {
      B::copy(u.owned.data(), reduced, u.shard * sizeof(S));
      u.full.reset();
    }
  }

  ZeroPolicy policy_;
  backend::DeviceComm<B> dp_;
  std::vector<Unit> units_;
  std::vector<Pending> pending_;
  std::vector<int> at_end_;                // units whose reduction waits for finish()
  std::unique_ptr<UnitWindow<S>> window_;  // the full gradients, when shared
};

}  // namespace trident::detail
