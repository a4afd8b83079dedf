// trident/nn/moe_router.hpp: the router of a mixture-of-experts MLP, on a backend.
//
// Each token's router logits (x Wr, nn::linear_forward) become probabilities over the E experts
// by a softmax; the token goes to its top-k experts (Switch Transformer, Fedus et al. 2021 §2.1:
// k = 1, the gate the raw probability; Mixtral, Jiang et al. 2024: k = 2, the chosen
// probabilities renormalised to sum to 1). The load-balancing loss is Switch's eq. 4,
// alpha E sum_i f_i P_i, applied to each sequence on its own as DeepSeek-V3's sequence-wise
// balance loss (DeepSeek-AI 2024): f_i the fraction of the sequence's choices that are expert
// i, P_i its mean probability. Row bodies over tokens, a body per sequence for the loss; every
// sum walks its terms in a fixed order (no atomics), so every backend and thread count agrees.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../backend/cpu/cpu.hpp"
#include "../backend/host_device.hpp"

namespace trident::nn {

namespace moe_router_detail {
// Row t: probs = softmax(logits) (max-subtracted); the k largest, ties to the lower index.
template <class T>
struct Forward {
  T* probs;
  std::int32_t* choice;
  T* gates;
  const T* logits;
  int E, k;
  TRIDENT_HOST_DEVICE void operator()(int t) const {
    const T* z = logits + std::ptrdiff_t(t) * E;
    T* p = probs + std::ptrdiff_t(t) * E;
    T top = z[0];
    for (int e = 1; e < E; ++e) top = backend::math::max(top, z[e]);
    T sum = 0;
    for (int e = 0; e < E; ++e) {
      p[e] = backend::math::exp(z[e] - top);
      sum += p[e];
    }
    for (int e = 0; e < E; ++e) p[e] = p[e] / sum;
    std::int32_t* c = choice + std::ptrdiff_t(t) * k;
    T* g = gates + std::ptrdiff_t(t) * k;
    T chosen = 0;
    for (int j = 0; j < k; ++j) {
      int best = -1;
      for (int e = 0; e < E; ++e) {
        bool taken = false;
        for (int i = 0; i < j; ++i) taken = taken || c[i] == e;
        if (!taken && (best < 0 || p[e] > p[best])) best = e;  // strict: ties keep the lower
      }
      c[j] = best;
      g[j] = p[best];
      chosen += p[best];
    }
    if (k > 1)
      for (int j = 0; j < k; ++j) g[j] = g[j] / chosen;
  }
};
// Row t: with S = sum_j p_cj and g_j = p_cj / S, dp_cm = (dg_m - sum_j dg_j g_j) / S (k > 1),
// dp_c0 = dg_0 (k = 1); 0 elsewhere.
template <class T>
struct GatesBackward {
  T* dprobs;
  const T* dgates;
  const T* probs;
  const std::int32_t* choice;
  const T* gates;
  int E, k;
  TRIDENT_HOST_DEVICE void operator()(int t) const {
    T* dp = dprobs + std::ptrdiff_t(t) * E;
    const T* p = probs + std::ptrdiff_t(t) * E;
    const std::int32_t* c = choice + std::ptrdiff_t(t) * k;
    const T* g = gates + std::ptrdiff_t(t) * k;
    const T* dg = dgates + std::ptrdiff_t(t) * k;
    for (int e = 0; e < E; ++e) dp[e] = T(0);
    if (k == 1) {
      dp[c[0]] = dg[0];
      return;
    }
    T chosen = 0;
    T weighted = 0;
    for (int j = 0; j < k; ++j) {
      chosen += p[c[j]];
      weighted += dg[j] * g[j];
    }
    for (int j = 0; j < k; ++j) dp[c[j]] = (dg[j] - weighted) / chosen;
  }
};
// Sequence b (rows s * batch + b): fractions[b, i] = f_bi, aux[b] = alpha E sum_i f_bi P_bi.
template <class T>
struct Balance {
  T* aux;
  T* fractions;
  const T* probs;
  const std::int32_t* choice;
  int seq, batch, E, k;
  T alpha;
  TRIDENT_HOST_DEVICE void operator()(int b) const {
    T total = 0;
    for (int i = 0; i < E; ++i) {
      int picks = 0;
      T mass = 0;
      for (int s = 0; s < seq; ++s) {
        const std::ptrdiff_t row = std::ptrdiff_t(s) * batch + b;
        for (int j = 0; j < k; ++j) picks += choice[row * k + j] == i ? 1 : 0;
        mass += probs[row * E + i];
      }
      const T f = T(picks) / T(seq * k);
      fractions[std::ptrdiff_t(b) * E + i] = f;
      total += f * (mass / T(seq));
    }
    aux[b] = alpha * T(E) * total;
  }
};
// dprobs[row, i] += scale f[row % batch, i], scale = weight alpha E / seq
template <class T>
struct BalanceBackward {
  T* dprobs;
  const T* fractions;
  int batch, E;
  T scale;
  TRIDENT_HOST_DEVICE void operator()(int row, int i) const {
    dprobs[std::ptrdiff_t(row) * E + i] += scale * fractions[std::ptrdiff_t(row % batch) * E + i];
  }
};
// Row t: dlogits = probs (dprobs - <dprobs, probs>)
template <class T>
struct SoftmaxBackward {
  T* dlogits;
  const T* dprobs;
  const T* probs;
  int E;
  TRIDENT_HOST_DEVICE void operator()(int t) const {
    const std::ptrdiff_t at = std::ptrdiff_t(t) * E;
    T dot = 0;
    for (int e = 0; e < E; ++e) dot += dprobs[at + e] * probs[at + e];
    for (int e = 0; e < E; ++e) dlogits[at + e] = probs[at + e] * (dprobs[at + e] - dot);
  }
};
}  // namespace moe_router_detail

// logits: (N, E) -> probs: (N, E) = softmax over experts (max-subtracted);
// choice: (N, k) the k experts of largest probability, in descending order, ties to the lower
// expert index; gates: (N, k) the chosen probabilities, for k > 1 renormalised to sum to 1
// (Mixtral), for k = 1 the raw probability (Switch). k <= E.
template <class Bk = backend::Cpu, class T>
void router_forward(T* probs, std::int32_t* choice, T* gates, const T* logits, int N, int E,
                    int k) {
  Bk::for_each(N, moe_router_detail::Forward<T>{probs, choice, gates, logits, E, k});
}

// dgates: (N, k), probs: (N, E), choice, gates: (N, k) from router_forward -> dprobs: (N, E),
// overwritten: the gates' gradient into the chosen experts' probabilities through the
// renormalisation (k > 1) or directly (k = 1); 0 for the other experts.
template <class Bk = backend::Cpu, class T>
void router_gates_backward(T* dprobs, const T* dgates, const T* probs, const std::int32_t* choice,
                           const T* gates, int N, int E, int k) {
  Bk::for_each(N, moe_router_detail::GatesBackward<T>{dprobs, dgates, probs, choice, gates, E, k});
}

// The load-balancing loss per sequence. probs: (N, E), choice: (N, k), rows [s, b]
// (row = s * batch + b, N = seq * batch)
// -> aux: (batch) aux_b = alpha E sum_i f_bi P_bi; fractions: (batch, E) f_bi (for the backward),
// f_bi = (sequence b's choices of expert i) / (seq k), P_bi = mean over its tokens of probs[., i].
template <class Bk = backend::Cpu, class T>
void load_balancing_forward(T* aux, T* fractions, const T* probs, const std::int32_t* choice,
                            int seq, int batch, int E, int k, T alpha) {
  Bk::for_each(
      batch, moe_router_detail::Balance<T>{aux, fractions, probs, choice, seq, batch, E, k, alpha});
}

// fractions: (batch, E) -> dprobs: (N, E) += weight alpha E f_bi / seq on every row (s, b): the
// gradient of weight * sum_b aux_b (f counts choices: it has no gradient).
template <class Bk = backend::Cpu, class T>
void load_balancing_backward(T* dprobs, const T* fractions, int seq, int batch, int E, T alpha,
                             T weight) {
  const T scale = weight * alpha * T(E) / T(seq);
  Bk::grid(seq * batch, E,
           moe_router_detail::BalanceBackward<T>{dprobs, fractions, batch, E, scale});
}

// dprobs, probs: (N, E) -> dlogits: (N, E) = probs (dprobs - sum_e dprobs probs), overwritten
// (the softmax's backward; dlogits may be dprobs: in place).
template <class Bk = backend::Cpu, class T>
void router_softmax_backward(T* dlogits, const T* dprobs, const T* probs, int N, int E) {
  Bk::for_each(N, moe_router_detail::SoftmaxBackward<T>{dlogits, dprobs, probs, E});
}

}  // namespace trident::nn
