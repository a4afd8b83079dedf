// trident/nn/moe_dispatch.hpp: the dropless permutation of tokens to experts, on a backend.
//
// MegaBlocks (Gale et al., "MegaBlocks: Efficient Sparse Training with Mixture-of-Experts",
// 2023) computes every routed (token, slot) pair, without a capacity and without dropping: the
// N k assignments are sorted into expert order (by expert, then token, then slot), so that each
// expert's rows are consecutive and its MLP is one GEMM of however many rows it got
// (experts.hpp). moe_route finds the order, moe_permute gathers the rows into it, moe_combine
// scatters the experts' outputs back, weighted by the gates, and the backwards run the same
// maps the other way. Every sum over a token's slots is in slot order: no atomics.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../backend/cpu/cpu.hpp"
#include "../backend/host_device.hpp"

namespace trident::nn {

namespace moe_dispatch_detail {
// Expert e: its slots start after every assignment to a lower expert; its own assignments are
// taken in (token, slot) order. E is small: each body walks all N k assignments twice.
struct Route {
  std::int32_t* counts;
  std::int32_t* position;
  std::int32_t* token;
  const std::int32_t* choice;
  int Nk, k;
  TRIDENT_HOST_DEVICE void operator()(int e) const {
    int start = 0;
    for (int a = 0; a < Nk; ++a) start += choice[a] < e ? 1 : 0;
    int n = 0;
    for (int a = 0; a < Nk; ++a) {
      if (choice[a] != e) continue;
      position[a] = start + n;
      token[start + n] = a / k;
      n += 1;
    }
    counts[e] = n;
  }
};
// xs[p, c] = x[token[p], c]
template <class T>
struct Permute {
  T* xs;
  const T* x;
  const std::int32_t* token;
  int C;
  TRIDENT_HOST_DEVICE void operator()(int p, int c) const {
    xs[std::ptrdiff_t(p) * C + c] = x[std::ptrdiff_t(token[p]) * C + c];
  }
};
// out[t, c] = sum_j gates[t, j] ys[position[t, j], c], j in order
template <class T>
struct Combine {
  T* out;
  const T* ys;
  const T* gates;
  const std::int32_t* position;
  int k, C;
  TRIDENT_HOST_DEVICE void operator()(int t, int c) const {
    T sum = 0;
    for (int j = 0; j < k; ++j) {
      const std::ptrdiff_t a = std::ptrdiff_t(t) * k + j;
      sum += gates[a] * ys[std::ptrdiff_t(position[a]) * C + c];
    }
    out[std::ptrdiff_t(t) * C + c] = sum;
  }
};
// Assignment a = (t, j): dys[position[a], c] = gates[a] dout[t, c]
template <class T>
struct CombineBackwardRows {
  T* dys;
  const T* dout;
  const T* gates;
  const std::int32_t* position;
  int k, C;
  TRIDENT_HOST_DEVICE void operator()(int a, int c) const {
    dys[std::ptrdiff_t(position[a]) * C + c] = gates[a] * dout[std::ptrdiff_t(a / k) * C + c];
  }
};
// Assignment a = (t, j): dgates[a] = <dout[t], ys[position[a]]>, columns in order
template <class T>
struct CombineBackwardGates {
  T* dgates;
  const T* dout;
  const T* ys;
  const std::int32_t* position;
  int k, C;
  TRIDENT_HOST_DEVICE void operator()(int a) const {
    const T* d = dout + std::ptrdiff_t(a / k) * C;
    const T* y = ys + std::ptrdiff_t(position[a]) * C;
    T dot = 0;
    for (int c = 0; c < C; ++c) dot += d[c] * y[c];
    dgates[a] = dot;
  }
};
// dx[t, c] (+)= sum_j dxs[position[t, j], c], j in order
template <class T>
struct Unpermute {
  T* dx;
  const T* dxs;
  const std::int32_t* position;
  int k, C;
  bool accumulate;
  TRIDENT_HOST_DEVICE void operator()(int t, int c) const {
    T sum = 0;
    for (int j = 0; j < k; ++j)
      sum += dxs[std::ptrdiff_t(position[std::ptrdiff_t(t) * k + j]) * C + c];
    const std::ptrdiff_t at = std::ptrdiff_t(t) * C + c;
    if (accumulate) sum = dx[at] + sum;
    dx[at] = sum;
  }
};
}  // namespace moe_dispatch_detail

// choice: (N, k) -> counts: (E) routed slots per expert; position: (N, k) where assignment
// (t, j) sits in expert order; token: (N k) the token at each position. Expert order: by
// expert, then token, then slot. All in Bk's memory (the caller downloads counts).
template <class Bk = backend::Cpu>
void moe_route(std::int32_t* counts, std::int32_t* position, std::int32_t* token,
               const std::int32_t* choice, int N, int E, int k) {
  Bk::for_each(E, moe_dispatch_detail::Route{counts, position, token, choice, N * k, k});
}

// x: (N, C), token: (N k) -> xs: (N k, C), row p = x[token[p]]
template <class Bk = backend::Cpu, class T>
void moe_permute(T* xs, const T* x, const std::int32_t* token, int Nk, int C) {
  Bk::grid(Nk, C, moe_dispatch_detail::Permute<T>{xs, x, token, C});
}

// ys: (N k, C), gates, position: (N, k) -> out: (N, C) = sum over j in order of
// gates[t, j] ys[position[t, j]], overwritten
template <class Bk = backend::Cpu, class T>
void moe_combine(T* out, const T* ys, const T* gates, const std::int32_t* position, int N, int k,
                 int C) {
  Bk::grid(N, C, moe_dispatch_detail::Combine<T>{out, ys, gates, position, k, C});
}

// dout: (N, C), ys: (N k, C), gates, position: (N, k)
// -> dys: (N k, C), dys[position[t, j]] = gates[t, j] dout[t];
//    dgates: (N, k) = <dout[t], ys[position[t, j]]> (both overwritten)
template <class Bk = backend::Cpu, class T>
void moe_combine_backward(T* dys, T* dgates, const T* dout, const T* ys, const T* gates,
                          const std::int32_t* position, int N, int k, int C) {
  Bk::grid(N * k, C, moe_dispatch_detail::CombineBackwardRows<T>{dys, dout, gates, position, k, C});
  Bk::for_each(N * k,
               moe_dispatch_detail::CombineBackwardGates<T>{dgates, dout, ys, position, k, C});
}

// dxs: (N k, C), position: (N, k) -> dx: (N, C) = sum over j in order of dxs[position[t, j]];
// accumulate: added to dx, else overwritten
template <class Bk = backend::Cpu, class T>
void moe_unpermute(T* dx, const T* dxs, const std::int32_t* position, int N, int k, int C,
                   bool accumulate) {
  Bk::grid(N, C, moe_dispatch_detail::Unpermute<T>{dx, dxs, position, k, C, accumulate});
}

}  // namespace trident::nn
