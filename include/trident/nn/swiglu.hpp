// trident/nn/swiglu.hpp: the SwiGLU gated activation of a Llama MLP, on a backend.
//
// SwiGLU(a, b) = SiLU(a) * b elementwise (Shazeer, "GLU Variants Improve Transformer", 2020),
// where SiLU(a) = a sigmoid(a) (Hendrycks & Gimpel's SiLU, "Swish" of Ramachandran et al.), a the
// gate projection and b the up projection of the same rows. a and b are read through a row
// stride `ld`, so that both may be halves of one (N, 2F) output [a | b] of a single
// (column-parallel) linear, or two (N, F) buffers (ld = F). Grid bodies, one element (i, f) each.
#pragma once

#include <cstddef>

#include "../backend/cpu/cpu.hpp"
#include "../backend/host_device.hpp"

namespace trident::nn {

namespace swiglu_detail {
template <class T>
struct Forward {
  T* out;
  const T* a;
  const T* b;
  int F, ld;
  TRIDENT_HOST_DEVICE void operator()(int i, int f) const {
    const std::ptrdiff_t at = std::ptrdiff_t(i) * ld + f;
    out[std::ptrdiff_t(i) * F + f] = a[at] * backend::math::sigmoid(a[at]) * b[at];
  }
};
// With sig = sigmoid(a): da = dout b sig (1 + a (1 - sig)), db = dout a sig; reads a, b first.
template <class T>
struct Backward {
  T* da;
  T* db;
  const T* dout;
  const T* a;
  const T* b;
  int F, ld;
  TRIDENT_HOST_DEVICE void operator()(int i, int f) const {
    const std::ptrdiff_t at = std::ptrdiff_t(i) * ld + f;
    const T ai = a[at], bi = b[at], g = dout[std::ptrdiff_t(i) * F + f];
    const T sig = backend::math::sigmoid(ai);
    db[at] = g * ai * sig;
    da[at] = g * bi * sig * (T(1) + ai * (T(1) - sig));
  }
};
}  // namespace swiglu_detail

// a, b: (N, F) with rows ld apart (ld >= F) -> out: (N, F) = SiLU(a) * b
template <class Bk = backend::Cpu, class T>
void swiglu_forward(T* out, const T* a, const T* b, int N, int F, int ld) {
  Bk::grid(N, F, swiglu_detail::Forward<T>{out, a, b, F, ld});
}

// dout: (N, F), a, b: (N, F) rows ld apart -> da, db: (N, F) rows ld apart, overwritten
// (da, db may be a and b: in place).
template <class Bk = backend::Cpu, class T>
void swiglu_backward(T* da, T* db, const T* dout, const T* a, const T* b, int N, int F, int ld) {
  Bk::grid(N, F, swiglu_detail::Backward<T>{da, db, dout, a, b, F, ld});
}

}  // namespace trident::nn
