// trident/tp/sequence_parallel_gradients.hpp: the gradients of TP-replicated parameters under
// sequence parallelism, summed over the TP group.
//
// With sequence parallelism (Korthikanti et al. 2022, §4.2.2) the layers outside Megatron's
// pairs (LayerNorm, the biases added after a row-parallel layer, GPT-2's position embedding) run
// on this rank's block of the sequence, so the gradients of their parameters, replicated over TP,
// are partial: one per sequence shard. After the last backward (ARCHITECTURE §2, step 4) they are
// summed over TP, all of a store's in one packed all-reduce.
//
// The store is a ZeRO unit store (zero/unit_store.hpp, a layer above: here a template parameter)
// with size(), layout(u).params, owned_begin(u) and reduced_grads(u).
#pragma once

#include <algorithm>
#include <type_traits>
#include <vector>

#include "../backend/device_buffer.hpp"
#include "../core/memory.hpp"
#include "../core/span.hpp"
#include "tensor_parallel.hpp"

namespace trident {

// f(range): each range of TP-replicated elements in the DP-reduced gradients `store` holds (unit
// u's from owned_begin(u) on), unit by unit, parameter by parameter.
template <class Store, class F>
void for_each_replicated_gradient(Store& store, F&& f) {
  for (int u = 0; u < store.size(); ++u) {
    const auto g = store.reduced_grads(u);
    const std::size_t begin = store.owned_begin(u), end = begin + g.size();
    for (const auto& p : store.layout(u).params) {
      const std::size_t a = std::max(begin, p.offset), e = std::min(end, p.offset + p.numel);
      if (a < e && p.tp_replicated()) f(g.subspan(a - begin, e - a));
    }
  }
}

// Sums the TP-replicated gradients of `store` over TP, in place: packed into one buffer, one
// all-reduce, unpacked. Nothing to do without sequence parallelism or on one TP rank.
template <class B, class Store>
void sum_replicated_gradients(const TensorParallel<B>& tp, Store& store) {
  if (!tp.sequence_parallel || tp.size() <= 1) return;
  using S = std::remove_pointer_t<decltype(store.reduced_grads(0).data())>;
  std::vector<Span<S>> ranges;
  for_each_replicated_gradient(store, [&](Span<S> r) { ranges.push_back(r); });
  std::size_t n = 0;
  for (const Span<S>& r : ranges) n += r.size();
  backend::DeviceBuffer<S, B> packed(MemoryKind::buffers, n, Fill::none);
  std::size_t at = 0;
  for (const Span<S>& r : ranges) B::copy(packed.data() + at, r.data(), r.bytes()), at += r.size();
  tp.all_reduce(packed.data(), n);
  at = 0;
  for (const Span<S>& r : ranges) B::copy(r.data(), packed.data() + at, r.bytes()), at += r.size();
}

}  // namespace trident
