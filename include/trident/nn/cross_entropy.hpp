// trident/nn/cross_entropy.hpp: softmax cross-entropy of next-token logits, vocabulary-split.
//
// loss_i = log(sum_v exp(logit_iv)) - logit_i,target_i, computed stably with the row maximum.
// The vocabulary (the columns) may be split over ranks as in Megatron's vocab-parallel
// cross-entropy (Shoeybi et al., "Megatron-LM", 2019): each rank holds the columns of global ids
// [vocab_begin, vocab_begin + V_local) and only three per-row numbers cross ranks: the maximum,
// the sum of exponentials and the target's logit. Those reductions are hooks, reduce(T* buf,
// int n) combining buf elementwise over the split (an MPI all-reduce in tp/); nn/ stays MPI-free.
// Columns whose global id is >= vocab_size are padding (the table is padded to split evenly):
// they take no part in the softmax and get probability 0. Rows are Eigen arrays (vectorized.hpp).
#pragma once

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <trident/nn/vectorized.hpp>

namespace trident::nn {

// The hook of an unsplit vocabulary: nothing to combine.
struct NoReduce {
  template <class T>
  void operator()(T*, int) const {}
};

// logits: (N, V_local), targets: (N) global ids in [0, vocab_size)
// -> losses: (N), probs: (N, V_local) softmax over the whole vocabulary, this rank's columns.
// probs may be logits (computed in place).
// Calls reduce_max(buf, N) once (row maxima), then reduce_sum(buf, 2 * N) once with buf =
// [sums of exp(logit - max) | target logits (0 where this rank does not own the target)]: the
// two sums are batched into one call.
template <class T, class ReduceMax = NoReduce, class ReduceSum = NoReduce>
void cross_entropy_forward(T* losses, T* probs, const T* logits, const std::int32_t* targets, int N,
                           int V_local, int vocab_begin, int vocab_size,
                           ReduceMax&& reduce_max = {}, ReduceSum&& reduce_sum = {}) {
  // Local columns that are real vocabulary entries: [0, V_valid).
  const int V_valid = std::clamp(vocab_size - vocab_begin, 0, V_local);
  std::vector<T> row_max(static_cast<std::size_t>(N)), sums(2 * static_cast<std::size_t>(N));
  T* target_logit = sums.data() + N;

#pragma omp parallel for
  for (int i = 0; i < N; ++i) {
    const CArrayMap<T> row(logits + static_cast<std::ptrdiff_t>(i) * V_local, V_valid);
    row_max[i] = V_valid > 0 ? row.maxCoeff() : -std::numeric_limits<T>::infinity();
  }
  reduce_max(row_max.data(), N);

#pragma omp parallel for
  for (int i = 0; i < N; ++i) {
    const T* row = logits + static_cast<std::ptrdiff_t>(i) * V_local;
    T* prow = probs + static_cast<std::ptrdiff_t>(i) * V_local;
    assert(targets[i] >= 0 && targets[i] < vocab_size && "cross_entropy: target out of range");
    const int local = targets[i] - vocab_begin;  // read before probs may overwrite logits
    target_logit[i] = (local >= 0 && local < V_valid) ? row[local] : T(0);
    ArrayMap<T> p(prow, V_valid);
    p = (CArrayMap<T>(row, V_valid) - row_max[i]).exp();  // in place when probs is logits
    std::fill(prow + V_valid, prow + V_local, T(0));
    sums[i] = p.sum();
  }
  reduce_sum(sums.data(), 2 * N);

#pragma omp parallel for
  for (int i = 0; i < N; ++i) {
    losses[i] = std::log(sums[i]) + row_max[i] - target_logit[i];
    T* prow = probs + static_cast<std::ptrdiff_t>(i) * V_local;
    ArrayMap<T>(prow, V_valid) *= T(1) / sums[i];
  }
}

// probs: (N, V_local) from the forward, targets: (N)
// -> dlogits: (N, V_local) = scale * (probs - onehot(target)) on this rank's columns, overwritten.
// scale is d(objective)/d(loss_i), e.g. 1 / (tokens of the global batch) for the mean loss.
template <class T>
void cross_entropy_backward(T* dlogits, const T* probs, const std::int32_t* targets, T scale, int N,
                            int V_local, int vocab_begin) {
#pragma omp parallel for
  for (int i = 0; i < N; ++i) {
    const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(i) * V_local;
    ArrayMap<T>(dlogits + row, V_local) = scale * CArrayMap<T>(probs + row, V_local);
    const int local = targets[i] - vocab_begin;
    if (local >= 0 && local < V_local) dlogits[row + local] -= scale;
  }
}

}  // namespace trident::nn
