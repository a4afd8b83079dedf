// trident/backend/kernels/swiglu.hpp: SwiGLU (a Llama MLP's gate) on a backend.
//
// SwiGLU(a, b) = SiLU(a) * b, SiLU(a) = a sigmoid(a) (Shazeer, "GLU Variants Improve
// Transformer", 2020), as nn/swiglu.hpp: a and b are (N, F) with rows ld apart (two halves of one
// (N, 2F) matrix, or two buffers with ld = F). One element (i, f) per call of the body.
#pragma once

#include "../host_device.hpp"

namespace trident::backend::kernels {

// a, b: (N, F) rows ld apart -> out: (N, F)
template <class T>
struct SwigluForward {
  T* out;
  const T* a;
  const T* b;
  int F, ld;
  TRIDENT_HOST_DEVICE void operator()(int k) const {
    const int i = k / F, f = k % F;
    const long at = long(i) * ld + f;
    out[k] = a[at] / (T(1) + math::exp(-a[at])) * b[at];
  }
};

// dout: (N, F) -> da, db: (N, F) rows ld apart (may be a and b: each element reads a, b first).
// With sig = sigmoid(a): da = dout b sig (1 + a (1 - sig)), db = dout a sig.
template <class T>
struct SwigluBackward {
  T* da;
  T* db;
  const T* dout;
  const T* a;
  const T* b;
  int F, ld;
  TRIDENT_HOST_DEVICE void operator()(int k) const {
    const int i = k / F, f = k % F;
    const long at = long(i) * ld + f;
    const T ai = a[at], bi = b[at], g = dout[k];
    const T sig = T(1) / (T(1) + math::exp(-ai));
    db[at] = g * ai * sig;
    da[at] = g * bi * sig * (T(1) + ai * (T(1) - sig));
  }
};

template <class B, class T>
void swiglu_forward(T* out, const T* a, const T* b, int N, int F, int ld) {
  B::for_each(N * F, SwigluForward<T>{out, a, b, F, ld});
}
template <class B, class T>
void swiglu_backward(T* da, T* db, const T* dout, const T* a, const T* b, int N, int F, int ld) {
  B::for_each(N * F, SwigluBackward<T>{da, db, dout, a, b, F, ld});
}

}  // namespace trident::backend::kernels
