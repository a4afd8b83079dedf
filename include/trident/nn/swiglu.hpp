// trident/nn/swiglu.hpp: the SwiGLU gated activation of a Llama MLP.
//
// SwiGLU(a, b) = SiLU(a) * b elementwise (Shazeer, "GLU Variants Improve Transformer", 2020),
// where SiLU(a) = a sigmoid(a) (Hendrycks & Gimpel's SiLU, "Swish" of Ramachandran et al.), a the
// gate projection and b the up projection of the same rows. a and b are read through a row
// stride `ld`, so that both may be halves of one (N, 2F) output [a | b] of a single
// (column-parallel) linear, or two (N, F) buffers (ld = F). Rows are Eigen arrays
// (vectorized.hpp): exp in SIMD registers.
#pragma once

#include <algorithm>
#include <cstddef>

#include <trident/nn/vectorized.hpp>

namespace trident::nn {

// a, b: (N, F) with rows ld apart (ld >= F) -> out: (N, F) = SiLU(a) * b
template <class T>
void swiglu_forward(T* out, const T* a, const T* b, int N, int F, int ld) {
#pragma omp parallel for
  for (int i = 0; i < N; ++i) {
    const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(i) * ld;
    const CArrayMap<T> ai(a + row, F);
    ArrayMap<T>(out + static_cast<std::ptrdiff_t>(i) * F, F) =
        ai / (T(1) + (-ai).exp()) * CArrayMap<T>(b + row, F);
  }
}

// dout: (N, F), a, b: (N, F) rows ld apart -> da, db: (N, F) rows ld apart, overwritten
// (da, db may be a and b: in place). With sig = sigmoid(a):
//   da = dout * b * sig (1 + a (1 - sig)),  db = dout * a sig.
template <class T>
void swiglu_backward(T* da, T* db, const T* dout, const T* a, const T* b, int N, int F, int ld) {
#pragma omp parallel for
  for (int i = 0; i < N; ++i) {
    for (int f = 0; f < F; f += int(kChunk)) {  // chunks of a row: temporaries on the stack
      const int n = std::min(F - f, int(kChunk));
      const std::ptrdiff_t at = static_cast<std::ptrdiff_t>(i) * ld + f;
      const CArrayMap<T> ai(a + at, n), bi(b + at, n);
      const CArrayMap<T> g(dout + static_cast<std::ptrdiff_t>(i) * F + f, n);
      const ChunkArray<T> sig = T(1) / (T(1) + (-ai).exp());
      const ChunkArray<T> da_i = g * bi * sig * (T(1) + ai * (T(1) - sig));
      ArrayMap<T>(db + at, n) = g * ai * sig;  // reads a, b before da, db overwrite them
      ArrayMap<T>(da + at, n) = da_i;
    }
  }
}

}  // namespace trident::nn
