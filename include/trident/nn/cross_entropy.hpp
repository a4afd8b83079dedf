// trident/nn/cross_entropy.hpp: softmax cross-entropy of next-token logits, vocabulary-split, on
// a backend.
//
// loss_i = log(sum_v exp(logit_iv)) - logit_i,target_i, computed stably with the row maximum.
// The vocabulary (the columns) may be split over ranks as in Megatron's vocab-parallel
// cross-entropy (Shoeybi et al., "Megatron-LM", 2019): each rank holds the columns of global ids
// [vocab_begin, vocab_begin + V_local) and only three per-row numbers cross ranks: the maximum,
// the sum of exponentials and the target's logit. Those reductions are hooks, reduce(T* buf,
// int n) combining buf (in Bk's memory) elementwise over the split (a TP all-reduce in tp/);
// nn/ knows no communication. Columns whose global id is >= vocab_size are padding (the table is
// padded to split evenly): they take no part in the softmax and get probability 0. Row bodies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "../backend/cpu/cpu.hpp"
#include "../backend/device_buffer.hpp"
#include "../backend/host_device.hpp"

namespace trident::nn {

// The hook of an unsplit vocabulary: nothing to combine.
struct NoReduce {
  template <class T>
  void operator()(T*, int) const {}
};

namespace cross_entropy_detail {
// row_max[i] = max of this rank's real columns of row i (-inf when it has none)
template <class T>
struct RowMax {
  T* row_max;
  const T* logits;
  int V_local, V_valid;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    const int valid = V_valid;  // members in locals: see column_blocks.hpp
    const T* row = logits + std::ptrdiff_t(i) * V_local;
    T m = -std::numeric_limits<T>::infinity();
    TRIDENT_SIMD_MAX(m)
    for (int v = 0; v < valid; ++v) m = backend::math::max(m, row[v]);
    row_max[i] = m;
  }
};
// probs = exp(logits - max) on real columns, 0 on padding; sums[i] = their sum,
// target_logit[i] = the target's logit when this rank holds it, else 0. probs may be logits.
template <class T>
struct ExpAndSum {
  T* probs;
  T* sums;
  T* target_logit;
  const T* logits;
  const T* row_max;
  const std::int32_t* targets;
  int V_local, V_valid, vocab_begin;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    const T* row = logits + std::ptrdiff_t(i) * V_local;
    T* prow = probs + std::ptrdiff_t(i) * V_local;
    const int local = targets[i] - vocab_begin;  // read before probs may overwrite logits
    target_logit[i] = (local >= 0 && local < V_valid) ? row[local] : T(0);
    const T m = row_max[i];
    const int valid = V_valid, local_columns = V_local;
    T sum = 0;
    TRIDENT_SIMD_SUM(sum)
    for (int v = 0; v < valid; ++v) {
      const T e = backend::math::exp(row[v] - m);
      prow[v] = e;
      sum += e;
    }
    for (int v = valid; v < local_columns; ++v) prow[v] = T(0);
    sums[i] = sum;
  }
};
// losses[i] = log(sum) + max - target logit; probs /= sum
template <class T>
struct NormalizeRows {
  T* losses;
  T* probs;
  const T* row_max;
  const T* sums;
  const T* target_logit;
  int V_valid, V_local;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    losses[i] = backend::math::log(sums[i]) + row_max[i] - target_logit[i];
    T* prow = probs + std::ptrdiff_t(i) * V_local;
    const T inv = T(1) / sums[i];
    const int valid = V_valid;
    TRIDENT_SIMD
    for (int v = 0; v < valid; ++v) prow[v] *= inv;
  }
};
// dlogits = scale * (probs - onehot(target)) on this rank's columns, row i
template <class T>
struct Backward {
  T* dlogits;
  const T* probs;
  const std::int32_t* targets;
  T scale;
  int V_local, vocab_begin;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    const int n = V_local;
    const T s = scale;
    T* d = dlogits + std::ptrdiff_t(i) * n;
    const T* p = probs + std::ptrdiff_t(i) * n;
    TRIDENT_SIMD
    for (int v = 0; v < n; ++v) d[v] = s * p[v];
    const int local = targets[i] - vocab_begin;
    if (local >= 0 && local < n) d[local] -= s;
  }
};
}  // namespace cross_entropy_detail

// logits: (N, V_local), targets: (N) global ids in [0, vocab_size)
// -> losses: (N), probs: (N, V_local) softmax over the whole vocabulary, this rank's columns.
// probs may be logits (computed in place). All in Bk's memory.
// Calls reduce_max(buf, N) once (row maxima), then reduce_sum(buf, 2 * N) once with buf =
// [sums of exp(logit - max) | target logits (0 where this rank does not own the target)]: the
// two sums are batched into one call.
template <class Bk = backend::Cpu, class T, class ReduceMax = NoReduce, class ReduceSum = NoReduce>
void cross_entropy_forward(T* losses, T* probs, const T* logits, const std::int32_t* targets, int N,
                           int V_local, int vocab_begin, int vocab_size,
                           ReduceMax&& reduce_max = {}, ReduceSum&& reduce_sum = {}) {
  namespace d = cross_entropy_detail;
  int V_valid = vocab_size - vocab_begin;  // local columns that are real vocabulary entries
  V_valid = V_valid < 0 ? 0 : (V_valid > V_local ? V_local : V_valid);
  backend::DeviceBuffer<T, Bk> row_max(MemoryKind::buffers, N, Fill::none),
      sums(MemoryKind::buffers, 2 * std::size_t(N), Fill::none);  // [sums | target logits]
  T* target_logit = sums.data() + N;
  Bk::for_each(N, d::RowMax<T>{row_max.data(), logits, V_local, V_valid});
  reduce_max(row_max.data(), N);
  Bk::for_each(N, d::ExpAndSum<T>{probs, sums.data(), target_logit, logits, row_max.data(), targets,
                                  V_local, V_valid, vocab_begin});
  reduce_sum(sums.data(), 2 * N);
  Bk::for_each(N, d::NormalizeRows<T>{losses, probs, row_max.data(), sums.data(), target_logit,
                                      V_valid, V_local});
}

// probs: (N, V_local) from the forward, targets: (N)
// -> dlogits: (N, V_local) = scale * (probs - onehot(target)) on this rank's columns, overwritten
// (dlogits may be probs). scale is d(objective)/d(loss_i), e.g. 1 / (tokens of the global batch).
template <class Bk = backend::Cpu, class T>
void cross_entropy_backward(T* dlogits, const T* probs, const std::int32_t* targets, T scale, int N,
                            int V_local, int vocab_begin) {
  Bk::for_each(
      N, cross_entropy_detail::Backward<T>{dlogits, probs, targets, scale, V_local, vocab_begin});
}

}  // namespace trident::nn
