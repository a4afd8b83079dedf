// trident/backend/kernels/embedding.hpp: GPT-2's token and position embeddings on a backend.
//
// As nn/embedding.hpp: the token table may hold the rows [vocab_begin, vocab_end) of a
// vocab-parallel split (Shoeybi et al., "Megatron-LM", 2019), tokens outside them give zeros;
// rows are tokens in [s, b] order (row i is position t_begin + i / B). Lookups are one element
// per call of the body; the backward sums are one column (token table) or one (position,
// column) (position table) per call, summing rows in order: no atomics, repeated tokens cannot
// race, and the sums are the CPU layer's.
#pragma once

#include <cstdint>

#include "../host_device.hpp"

namespace trident::backend::kernels {

// tokens: (N), wte: (vocab_end - vocab_begin, C) -> out: (N, C), element k = (i, c)
template <class T>
struct TokenEmbeddingForward {
  T* out;
  const std::int32_t* tokens;
  const T* wte;
  int C, vocab_begin, vocab_end;
  TRIDENT_HOST_DEVICE void operator()(int k) const {
    const int i = k / C, c = k % C;
    const std::int32_t t = tokens[i];
    out[k] = (t >= vocab_begin && t < vocab_end) ? wte[long(t - vocab_begin) * C + c] : T(0);
  }
};

// dout: (N, C) -> dwte: (vocab_end - vocab_begin, C) +=, column c per call
template <class T>
struct TokenEmbeddingBackward {
  T* dwte;
  const T* dout;
  const std::int32_t* tokens;
  int N, C, vocab_begin, vocab_end;
  TRIDENT_HOST_DEVICE void operator()(int c) const {
    for (int i = 0; i < N; ++i) {
      const std::int32_t t = tokens[i];
      if (t >= vocab_begin && t < vocab_end)
        dwte[long(t - vocab_begin) * C + c] += dout[long(i) * C + c];
    }
  }
};

// wpe: (positions, C) -> out: (rows, C) += wpe[t_begin + i / B], element k = (i, c)
template <class T>
struct PositionEmbeddingForward {
  T* out;
  const T* wpe;
  int B, t_begin, C;
  TRIDENT_HOST_DEVICE void operator()(int k) const {
    const int i = k / C, c = k % C;
    out[k] += wpe[long(t_begin + i / B) * C + c];
  }
};

// dout: (rows, C) -> dwpe[t_begin + s] += the B rows of position s; element k = (s, c)
template <class T>
struct PositionEmbeddingBackward {
  T* dwpe;
  const T* dout;
  int B, t_begin, C;
  TRIDENT_HOST_DEVICE void operator()(int k) const {
    const int s = k / C, c = k % C;
    T sum = dwpe[long(t_begin + s) * C + c];
    for (int b = 0; b < B; ++b) sum += dout[(long(s) * B + b) * C + c];
    dwpe[long(t_begin + s) * C + c] = sum;
  }
};

// Bk: the backend type (B is the batch here).
template <class Bk, class T>
void token_embedding_forward(T* out, const std::int32_t* tokens, const T* wte, int N, int C,
                             int vocab_begin, int vocab_end) {
  Bk::for_each(N * C, TokenEmbeddingForward<T>{out, tokens, wte, C, vocab_begin, vocab_end});
}
template <class Bk, class T>
void token_embedding_backward(T* dwte, const T* dout, const std::int32_t* tokens, int N, int C,
                              int vocab_begin, int vocab_end) {
  Bk::for_each(C, TokenEmbeddingBackward<T>{dwte, dout, tokens, N, C, vocab_begin, vocab_end});
}
template <class Bk, class T>
void position_embedding_forward(T* out, const T* wpe, int rows, int B, int t_begin, int C) {
  Bk::for_each(rows * C, PositionEmbeddingForward<T>{out, wpe, B, t_begin, C});
}
// rows: a multiple of B
template <class Bk, class T>
void position_embedding_backward(T* dwpe, const T* dout, int rows, int B, int t_begin, int C) {
  Bk::for_each(rows / B * C, PositionEmbeddingBackward<T>{dwpe, dout, B, t_begin, C});
}

}  // namespace trident::backend::kernels
