// trident/nn/experts.hpp: the E SwiGLU MLPs of a mixture-of-experts layer, on a backend.
//
// After moe_dispatch.hpp's permutation the rows routed to expert e are consecutive (expert 0's
// first), counts[e] of them, so each expert is a Llama MLP over its own row group, as
// MegaBlocks (Gale et al. 2023) computes it without dropping: gate_up = xs w1 (C -> [gate | up],
// 2Fl), act = SwiGLU(gate, up) (swiglu.hpp; Shazeer 2020), ys = act w2 (Fl -> C). Two GEMMs
// per expert through Bk::gemm and swiglu.hpp's bodies, nothing written twice. counts live on
// the host (the caller downloads moe_route's), since the GEMMs' shapes are host arguments; an
// expert with no rows launches nothing. The backward splits as zero-bubble's B and W (Qi et
// al. 2023; backward_part.hpp).
#pragma once

#include <cstddef>

#include "../backend/cpu/cpu.hpp"
#include "../backend/device_buffer.hpp"
#include "backward_part.hpp"
#include "swiglu.hpp"

namespace trident::nn {

// counts: host, (E) rows of each expert, consecutive in xs (expert 0's first). Per expert e:
// w1 + e C 2Fl is (C, 2Fl) = [gate | up], w2 + e Fl C is (Fl, C).
// xs: (R, C), R = sum counts -> gate_up: (R, 2Fl), act: (R, Fl) = SwiGLU(gate, up),
// ys: (R, C) (all overwritten; experts with 0 rows launch nothing)
template <class Bk = backend::Cpu, class T>
void experts_forward(T* ys, T* gate_up, T* act, const T* xs, const T* w1, const T* w2,
                     const int* counts, int E, int C, int Fl) {
  const int F2 = 2 * Fl;
  std::ptrdiff_t r = 0;  // the expert's first row
  for (int e = 0; e < E; ++e) {
    const int n = counts[e];
    if (n == 0) continue;
    T* gu = gate_up + r * F2;
    T* a = act + r * Fl;
    // gu: (n, 2Fl) = xs_e: (n, C) w1_e: (C, 2Fl)
    Bk::gemm(false, false, n, F2, C, xs + r * C, C, w1 + std::ptrdiff_t(e) * C * F2, F2, T(0), gu,
             F2);
    // a: (n, Fl) = SiLU(gu[:, :Fl]) * gu[:, Fl:]
    swiglu_forward<Bk>(a, gu, gu + Fl, n, Fl, F2);
    // ys_e: (n, C) = a: (n, Fl) w2_e: (Fl, C)
    Bk::gemm(false, false, n, C, Fl, a, Fl, w2 + std::ptrdiff_t(e) * Fl * C, C, T(0), ys + r * C,
             C);
    r += n;
  }
}

namespace experts_detail {
// One expert's B: dys: (n, C) -> d_act: (n, Fl) = dys w2^T, d_gate_up: (n, 2Fl) by SwiGLU's
// backward, dxs: (n, C) = d_gate_up w1^T.
template <class Bk, class T>
void expert_input(T* dxs, T* d_gate_up, T* d_act, const T* dys, const T* gate_up, const T* w1,
                  const T* w2, int n, int C, int Fl) {
  const int F2 = 2 * Fl;
  Bk::gemm(false, true, n, Fl, C, dys, C, w2, C, T(0), d_act, Fl);
  swiglu_backward<Bk>(d_gate_up, d_gate_up + Fl, d_act, gate_up, gate_up + Fl, n, Fl, F2);
  Bk::gemm(false, true, n, C, F2, d_gate_up, F2, w1, F2, T(0), dxs, C);
}
// One expert's W: dw1: (C, 2Fl) += xs^T d_gate_up, dw2: (Fl, C) += act^T dys.
template <class Bk, class T>
void expert_weight(T* dw1, T* dw2, const T* d_gate_up, const T* dys, const T* xs, const T* act,
                   int n, int C, int Fl) {
  const int F2 = 2 * Fl;
  Bk::gemm(true, false, C, F2, n, xs, C, d_gate_up, F2, T(1), dw1, F2);
  Bk::gemm(true, false, Fl, C, n, act, Fl, dys, C, T(1), dw2, C);
}
}  // namespace experts_detail

// dys: (R, C) and the forward's xs, gate_up, act, w1, w2, counts.
// part input: d_gate_up: (R, 2Fl) and dxs: (R, C) overwritten (reads w1, w2, gate_up; dw1, dw2
//   unused, may be null); SwiGLU's input gradient d_act goes through a scratch buffer of the
//   largest expert's rows, (max counts, Fl), reused expert after expert;
// part weight: dw1 += xs^T d_gate_up, dw2 += act^T dys per expert (reads xs, act, dys and the
//   d_gate_up of the input part; dxs unused);
// part both: all of it.
template <class Bk = backend::Cpu, class T>
void experts_backward(T* dxs, T* dw1, T* dw2, T* d_gate_up, const T* dys, const T* xs,
                      const T* gate_up, const T* act, const T* w1, const T* w2, const int* counts,
                      int E, int C, int Fl, BackwardPart part) {
  const int F2 = 2 * Fl;
  int most = 0;
  for (int e = 0; e < E; ++e) most = counts[e] > most ? counts[e] : most;
  backend::DeviceBuffer<T, Bk> d_act(MemoryKind::buffers,
                                     computes_input(part) ? std::size_t(most) * Fl : 0, Fill::none);
  std::ptrdiff_t r = 0;
  for (int e = 0; e < E; ++e) {
    const int n = counts[e];
    if (n == 0) continue;
    const std::ptrdiff_t w1_at = std::ptrdiff_t(e) * C * F2, w2_at = std::ptrdiff_t(e) * Fl * C;
    if (computes_input(part))
      experts_detail::expert_input<Bk>(dxs + r * C, d_gate_up + r * F2, d_act.data(), dys + r * C,
                                       gate_up + r * F2, w1 + w1_at, w2 + w2_at, n, C, Fl);
    if (computes_weights(part))
      experts_detail::expert_weight<Bk>(dw1 + w1_at, dw2 + w2_at, d_gate_up + r * F2, dys + r * C,
                                        xs + r * C, act + r * Fl, n, C, Fl);
    r += n;
  }
}

}  // namespace trident::nn
