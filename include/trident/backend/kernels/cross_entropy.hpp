// trident/backend/kernels/cross_entropy.hpp: softmax cross-entropy on a backend, incl. the
// vocab-parallel form.
//
// As nn/cross_entropy.hpp: loss_i = log(sum_v exp(logit_iv)) - logit_i,target_i, stable with the
// row maximum; the columns may be the slice [vocab_begin, vocab_begin + V_local) of a
// vocabulary split over ranks (Shoeybi et al., "Megatron-LM", 2019), and only three numbers per
// row cross ranks, through the hooks reduce_max(buf, N) and reduce_sum(buf, 2N), called on
// buffers in the backend's memory (collectives.hpp stages them through the host when needed).
// Columns with a global id >= vocab_size are padding: probability 0. One row per call of the
// bodies; the backward one element per call.
#pragma once

#include <cstdint>
#include <limits>

#include "../../core/memory.hpp"
#include "../device_buffer.hpp"
#include "../host_device.hpp"

namespace trident::backend::kernels {

// row_max[i] = max of this rank's real columns of row i (-inf when it has none)
template <class T>
struct RowMax {
  T* row_max;
  const T* logits;
  int V_local, V_valid;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    const T* row = logits + long(i) * V_local;
    T m = -std::numeric_limits<T>::infinity();
    for (int v = 0; v < V_valid; ++v) m = math::max(m, row[v]);
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
    const T* row = logits + long(i) * V_local;
    T* prow = probs + long(i) * V_local;
    const int local = targets[i] - vocab_begin;  // read before probs may overwrite logits
    target_logit[i] = (local >= 0 && local < V_valid) ? row[local] : T(0);
    T sum = 0;
    for (int v = 0; v < V_valid; ++v) {
      prow[v] = math::exp(row[v] - row_max[i]);
      sum += prow[v];
    }
    for (int v = V_valid; v < V_local; ++v) prow[v] = T(0);
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
    losses[i] = math::log(sums[i]) + row_max[i] - target_logit[i];
    T* prow = probs + long(i) * V_local;
    const T inv = T(1) / sums[i];
    for (int v = 0; v < V_valid; ++v) prow[v] *= inv;
  }
};

// dlogits = scale * (probs - onehot(target)) on this rank's columns; element k = (i, v)
template <class T>
struct CrossEntropyBackward {
  T* dlogits;
  const T* probs;
  const std::int32_t* targets;
  T scale;
  int V_local, vocab_begin;
  TRIDENT_HOST_DEVICE void operator()(int k) const {
    const int i = k / V_local, v = k % V_local;
    T d = scale * probs[k];
    if (targets[i] - vocab_begin == v) d -= scale;
    dlogits[k] = d;
  }
};

struct NoReduce {
  template <class T>
  void operator()(T*, int) const {}
};

// logits: (N, V_local), targets: (N) -> losses: (N), probs: (N, V_local); all in B's memory.
template <class B, class T, class ReduceMax = NoReduce, class ReduceSum = NoReduce>
void cross_entropy_forward(T* losses, T* probs, const T* logits, const std::int32_t* targets, int N,
                           int V_local, int vocab_begin, int vocab_size,
                           ReduceMax&& reduce_max = {}, ReduceSum&& reduce_sum = {}) {
  int V_valid = vocab_size - vocab_begin;
  V_valid = V_valid < 0 ? 0 : (V_valid > V_local ? V_local : V_valid);
  DeviceBuffer<T, B> row_max(MemoryKind::buffers, N, Fill::none);
  DeviceBuffer<T, B> sums(MemoryKind::buffers, 2 * std::size_t(N), Fill::none);  // [sums | targets]
  T* target_logit = sums.data() + N;
  B::for_each(N, RowMax<T>{row_max.data(), logits, V_local, V_valid});
  reduce_max(row_max.data(), N);
  B::for_each(N, ExpAndSum<T>{probs, sums.data(), target_logit, logits, row_max.data(), targets,
                              V_local, V_valid, vocab_begin});
  reduce_sum(sums.data(), 2 * N);
  B::for_each(N, NormalizeRows<T>{losses, probs, row_max.data(), sums.data(), target_logit, V_valid,
                                  V_local});
}

template <class B, class T>
void cross_entropy_backward(T* dlogits, const T* probs, const std::int32_t* targets, T scale, int N,
                            int V_local, int vocab_begin) {
  B::for_each(N * V_local,
              CrossEntropyBackward<T>{dlogits, probs, targets, scale, V_local, vocab_begin});
}

}  // namespace trident::backend::kernels
