// trident/zero/unit_store.hpp: the flat parameter and gradient buffers of one model chunk, and
// what each ZeRO stage does with them (policy.hpp), on a backend B.
//
// A unit's local parameters (params.hpp) are one flat buffer, padded to a multiple of the
// DP size and split into DP equal shards: rank d owns [d * shard, (d+1) * shard). Units are the
// buckets: a unit's gradient reduction is launched (nonblocking) as soon as its backward is
// done, and overlaps the backward of the units before it.
//
// Types: T computes (float or double); S stores parameters and gradients (T, or bf16 for mixed
// precision, with T master weights and moments: the paper's 2 + 2 + 12 bytes); B holds every
// buffer (parameters, gradients, master weights, moments, gathered and converted copies) in its
// memory, converts and accumulates them with its kernels (backend/ops.hpp) and reduces them over
// DP through a DeviceComm<B> (MPI, NCCL or host staging). Host code never reads them: the
// optimizer and the trainer work through kernels, checkpoints through host copies.
//
// The model uses four calls per unit: gather_parameters() before computing with it (ZeRO-3's
// all-gather, and the conversion to T under mixed precision; prefetch_parameters() starts the
// next unit's gather early), release_parameters() after, grads() for the buffer its backward
// accumulates into, launch_gradient_reduction() when that unit's backward is done (the DP
// gradient reduction, nonblocking or, GradOverlap::at_end, left for the end;
// finish_gradient_reduction() runs those and waits for all of them). The gradients and their
// reduction are detail/unit_gradients.hpp's; this store holds the parameters and the optimizer
// states.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "../backend/cpu/cpu.hpp"
#include "../backend/device_buffer.hpp"
#include "../backend/device_comm.hpp"
#include "../backend/ops.hpp"
#include "../core/comm.hpp"
#include "../core/memory.hpp"
#include "detail/unit_gradients.hpp"
#include "detail/unit_window.hpp"
#include "params.hpp"
#include "policy.hpp"

namespace trident {

template <class T, class S = T, class B = backend::Cpu>
class UnitStore {
  static constexpr bool kSameType = std::is_same_v<T, S>;
  // whether full gradients and parameters may live in a shared window (detail/unit_window.hpp):
  // host memory of ranks on one node
  static constexpr bool kWindowed = kSameType && std::is_floating_point_v<S> && B::kHostMemory;
  template <class V>
  using Buf = backend::DeviceBuffer<V, B>;
  using Gradients = detail::UnitGradients<T, S, B>;

 public:
  // dp: the data-parallel group's collectives on B's memory. Collective over it.
  UnitStore(std::vector<UnitLayout> layouts, ZeroPolicy policy, const backend::DeviceComm<B>& dp)
      : policy_(policy), dp_(dp) {
    policy_.validate();
    const Comm& group = dp.comm();
    // the group shares a node's memory: it has a shared-memory segment (collective over dp)
    const bool shared = group.size() > 1 && shm_tuning().enabled && shared_segment(group.get());
    if (policy_.overlap == GradOverlap::automatic)
      policy_.overlap = shared ? GradOverlap::at_end : GradOverlap::overlapped;
    const std::size_t n = group.size();
    std::vector<std::size_t> padded;
    for (UnitLayout& l : layouts) {
      Unit u;
      u.padded = (l.numel + n - 1) / n * n;
      u.shard = u.padded / n;
      u.layout = std::move(l);
      padded.push_back(u.padded);
      units_.push_back(std::move(u));
    }
    // shared windows (collective over dp): the full gradients, reduced in place, when they are
    // kept whole; the full parameters, all-gathered in place, when they are published
    const bool in_window = kWindowed && shared && policy_.overlap == GradOverlap::at_end;
    gradients_ = Gradients(policy_, dp_, padded, in_window && !policy_.shards_gradients());
    if constexpr (kWindowed)
      if (in_window && policy_.publishes_parameters())
        params_window_ =
            std::make_unique<detail::UnitWindow<S>>(group, padded, MemoryKind::parameters);
  }

  // A host app's store on the CPU: the group's collectives along B's path without NCCL.
  UnitStore(std::vector<UnitLayout> layouts, ZeroPolicy policy, const Comm& dp)
      : UnitStore(std::move(layouts), policy,
                  backend::DeviceComm<B>(dp, backend::DeviceComm<B>::staged_path())) {}

  const ZeroPolicy& policy() const { return policy_; }
  const backend::DeviceComm<B>& dp() const { return dp_; }
  int size() const { return static_cast<int>(units_.size()); }
  const UnitLayout& layout(int u) const { return units_[u].layout; }
  int find(const std::string& name) const {
    for (int u = 0; u < size(); ++u)
      if (units_[u].layout.name == name) return u;
    return -1;
  }
  std::size_t padded(int u) const { return units_[u].padded; }
  std::size_t shard(int u) const { return units_[u].shard; }
  std::size_t shard_begin(int u) const { return dp_.rank() * units_[u].shard; }
  // The elements whose optimizer state this rank keeps: all (stage 0) or its shard.
  std::size_t owned_begin(int u) const { return policy_.shards_optimizer() ? shard_begin(u) : 0; }
  std::size_t owned_size(int u) const {
    return policy_.shards_optimizer() ? units_[u].shard : units_[u].padded;
  }
  // Elements of parameters this rank holds: the whole unit (stages 0-2) or its shard (3).
  std::size_t held_params(int u) const {
    return policy_.shards_parameters() ? units_[u].shard : units_[u].padded;
  }

  // Allocates the model states and fills the parameters; init(u, full) writes unit u's values
  // (numel of them) into a host T buffer, which is copied to B's memory.
  template <class Init>
  void initialise(Init&& init) {
    for (int i = 0; i < size(); ++i) {
      Unit& u = units_[i];
      std::vector<T> full(u.padded, T(0));
      init(i, full.data());
      const std::size_t first = policy_.shards_parameters() ? shard_begin(i) : 0;
      const std::size_t held = held_params(i);
      if (!params_window_) u.params.allocate(MemoryKind::parameters, held, Fill::none);
      std::vector<S> values(held);
      for (std::size_t k = 0; k < held; ++k) values[k] = convert_to<S>(full[first + k]);
      backend::copy_from_host<B>(params_of(i), values.data(), held);
      const std::size_t owned = owned_size(i);
      if (!kSameType) {
        u.master.allocate(MemoryKind::optimizer, owned, Fill::none);
        backend::copy_from_host<B>(u.master.data(), full.data() + owned_begin(i), owned);
      }
      u.m.allocate(MemoryKind::optimizer, owned);
      u.v.allocate(MemoryKind::optimizer, owned);
      gradients_.allocate(i);
    }
  }

  // --- parameters -------------------------------------------------------------------------

  // ZeRO-3: starts gathering unit u (no-op when it is gathered, or gathering, already).
  void prefetch_parameters(int i) {
    Unit& u = units_[i];
    if (!policy_.shards_parameters() || u.view.allocated() || u.gathering.allocated()) return;
    u.gathering.allocate(MemoryKind::buffers, u.padded, Fill::none);  // the all-gather writes all
    u.gather = dp_.iall_gather(params_of(i), u.gathering.data(), u.shard);
  }

  // Unit u's parameters, full (this TP rank's block) and in T, in B's memory. Valid until
  // release_parameters(u).
  [[nodiscard]] const T* gather_parameters(int i) {
    Unit& u = units_[i];
    if constexpr (kSameType)
      if (!policy_.shards_parameters()) return params_of(i);
    if (u.view.allocated()) return u.view.data();
    if (policy_.shards_parameters()) {
      prefetch_parameters(i);
      u.gather.wait();
      if constexpr (kSameType) {
        u.view = std::move(u.gathering);
        return u.view.data();
      }
    }
    const S* full = policy_.shards_parameters() ? u.gathering.data() : params_of(i);
    u.view.allocate(MemoryKind::buffers, u.padded, Fill::none);
    backend::convert<B>(u.view.data(), full, u.padded);
    u.gathering.reset();
    return u.view.data();
  }

  // Frees the gathered or converted copy (kept until end_step() under keep_gathered).
  void release_parameters(int i) {
    if (policy_.keeps_parameters_gathered()) return;
    units_[i].view.reset();
  }

  // --- gradients (detail/unit_gradients.hpp) ----------------------------------------------

  // The T buffer that unit u's backward accumulates into (+=) for the current microbatch.
  T* grads(int i) { return gradients_.grads(i); }
  // Unit u's backward for this microbatch is done; last: it was the step's last microbatch.
  // Launches the DP gradient reduction the stage calls for (the bucket's all-reduce at stage 0,
  // a reduce-scatter at stages 1-3), nonblocking: it overlaps the rest of the backward.
  void launch_gradient_reduction(int i, bool last) { gradients_.launch(i, last); }
  // Lets outstanding reductions progress and adds the completed ones, in launch order.
  void poll() { gradients_.poll(); }
  // Runs the reductions left for the end (at_end) and waits for every other: afterwards
  // reduced_grads() holds the DP-summed gradients.
  void finish_gradient_reduction() { gradients_.finish(); }
  // The DP-reduced gradient of the elements this rank owns (owned_begin, owned_size), in B's
  // memory: the whole unit (stage 0) or its owned shard.
  Span<S> reduced_grads(int i) { return gradients_.reduced(i); }

  // Parameters, master weights (T) and moments of the owned elements, for the optimizer; in
  // B's memory.
  S* owned_params(int i) {
    return params_of(i) + (policy_.shards_parameters() ? 0 : owned_begin(i));
  }
  T* master(int i) {
    if constexpr (kSameType)
      return owned_params(i);
    else
      return units_[i].master.data();
  }
  T* moment1(int i) { return units_[i].m.data(); }
  T* moment2(int i) { return units_[i].v.data(); }

  // After the optimizer: bf16 parameters from the master weights, then (stages 1, 2) the
  // updated shards all-gathered over DP: nonblocking, all started before any is waited for, or
  // (at_end) blocking, to take the shared-memory path where it wins (core/comm.hpp), or in one
  // call, in place, when the parameters lie in a shared window.
  void publish_params() {
    if constexpr (kWindowed)
      if (params_window_) return params_window_->gather(dp_.comm());  // S == T: no conversion
    std::vector<backend::DeviceRequest> gathers;
    for (int i = 0; i < size(); ++i) {
      Unit& u = units_[i];
      if constexpr (!kSameType)
        backend::convert<B>(owned_params(i), u.master.data(), owned_size(i));
      if (!policy_.publishes_parameters()) continue;
      if (policy_.overlap == GradOverlap::at_end)
        dp_.all_gather_in_place(params_of(i), u.padded);
      else
        gathers.push_back(dp_.iall_gather_in_place(params_of(i), u.padded));
    }
    for (backend::DeviceRequest& r : gathers) r.wait();
  }

  // Start of a step: gradients to zero, kept parameter copies freed.
  void begin_step() {
    gradients_.begin_step();
    for (Unit& u : units_)
      if (policy_.shards_parameters()) u.view.reset();
  }
  // End of a step: per-step buffers of stages 2 and 3 freed.
  void end_step() {
    gradients_.end_step();
    for (Unit& u : units_) {
      u.gather.wait();
      u.gathering.reset();
      if (policy_.shards_parameters()) u.view.reset();
    }
  }

 private:
  struct Unit {
    UnitLayout layout;
    std::size_t padded = 0, shard = 0;
    Buf<S> params;        // full (stages 0-2) or the owned shard (3); or in the window
    Buf<T> master, m, v;  // owned elements: master weights (S != T), Adam moments
    Buf<T> view;          // compute copy: gathered/converted parameters
    Buf<S> gathering;     // ZeRO-3 all-gather target
    backend::DeviceRequest gather;
  };
  // Unit i's parameters this rank holds (full, or the shard at stage 3): in the window or not.
  S* params_of(int i) {
    if constexpr (kWindowed)
      if (params_window_) return params_window_->unit(i);
    return units_[i].params.data();
  }

  ZeroPolicy policy_;
  backend::DeviceComm<B> dp_;
  std::vector<Unit> units_;
  Gradients gradients_;
  std::unique_ptr<detail::UnitWindow<S>> params_window_;  // the full parameters, when shared
};

}  // namespace trident
