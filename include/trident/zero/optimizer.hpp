// trident/zero/optimizer.hpp: the optimizer step on what each rank owns — the global gradient
// norm from DP shards, and AdamW on the owned elements of every unit — on the store's backend.
#pragma once

#include <algorithm>

#include "../backend/ops.hpp"
#include "../optim/adamw.hpp"
#include "unit_store.hpp"

namespace trident {

// Calls f(param, a, b) for each parameter of `layout` overlapping the unit range [begin, end),
// with [a, b) the overlap in unit coordinates.
template <class F>
void for_each_param_in(const UnitLayout& layout, std::size_t begin, std::size_t end, F&& f) {
  for (const LocalParam& p : layout.params) {
    const std::size_t a = std::max(begin, p.offset), b = std::min(end, p.offset + p.numel);
    if (a < b) f(p, a, b);
  }
}

// Adds to `sums` the ranges of DP-reduced gradients in this rank's DP shard of every unit, for
// parameters with counted(unit, param) (each element of the model must be counted on exactly
// one rank: the caller skips TP-replicated copies and the tied embedding's second copy). The
// sums are computed on the store's backend and cross to the host once (backend::SquareSums).
template <class T, class S, class B, class Counted>
void add_shard_squares(backend::SquareSums<B, S>& sums, UnitStore<T, S, B>& store,
                       Counted&& counted) {
  for (int u = 0; u < store.size(); ++u) {
    const Span<S> g = store.reduced_grads(u);
    const std::size_t begin = store.shard_begin(u);
    const std::size_t base = store.owned_begin(u);  // g's first unit index: g is what it owns
    for_each_param_in(store.layout(u), begin, begin + store.shard(u),
                      [&](const LocalParam& p, std::size_t a, std::size_t b) {
                        if (counted(u, p)) sums.add(g.data() + (a - base), b - a);
                      });
  }
}

// The sum of squares of add_shard_squares's ranges of one store.
template <class T, class S, class B, class Counted>
double shard_square_sum(UnitStore<T, S, B>& store, Counted&& counted) {
  backend::SquareSums<B, S> sums;
  add_shard_squares(sums, store, counted);
  double total = 0;
  for (double s : sums.compute()) total += s;
  return total;
}

// AdamW (optim/adamw.hpp) on every owned element, gradients scaled by grad_scale (clipping), on
// the store's backend; then the store publishes the new parameters (bf16 copies, DP
// all-gather).
template <class T, class S, class B>
void adamw_step(UnitStore<T, S, B>& store, const AdamW& opt, int t, double lr, double grad_scale) {
  for (int u = 0; u < store.size(); ++u) {
    const std::size_t begin = store.owned_begin(u);
    const Span<S> g = store.reduced_grads(u);
    for_each_param_in(store.layout(u), begin, begin + store.owned_size(u),
                      [&](const LocalParam& p, std::size_t a, std::size_t b) {
                        const std::size_t k = a - begin;
                        opt.template update<B>(store.master(u) + k, g.data() + k,
                                               store.moment1(u) + k, store.moment2(u) + k, b - a, t,
                                               lr, p.spec.decay, grad_scale);
                      });
  }
  store.publish_params();
}

}  // namespace trident
