// trident/nn/embedding.hpp: GPT-2's token and learned position embeddings (wte, wpe), on a
// backend.
//
// The token table may be split by rows over ranks, as Megatron's vocab-parallel embedding
// (Shoeybi et al., "Megatron-LM", 2019): a rank holds the rows of vocabulary ids
// [vocab_begin, vocab_end) and writes zeros for tokens outside them, so that summing the outputs
// of all ranks gives the full lookup. Rows are tokens in [s, b] order: row i is position
// t_begin + i / batch, which lets a rank hold a contiguous slice of the sequence. Lookups are row
// bodies; the token table's gradient a column body over all rows in order (repeated tokens
// cannot race; column_blocks.hpp), the position table's a body per position.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../backend/cpu/cpu.hpp"
#include "../backend/host_device.hpp"
#include "column_blocks.hpp"
#include "positions.hpp"

namespace trident::nn {

namespace embedding_detail {
template <class T>
struct TokenForward {
  T* out;
  const std::int32_t* tokens;
  const T* wte;
  int C, vocab_begin, vocab_end;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    const int n = C;  // members in locals: see column_blocks.hpp
    T* row = out + std::ptrdiff_t(i) * n;
    const std::int32_t t = tokens[i];
    if (t < vocab_begin || t >= vocab_end) {
      TRIDENT_SIMD
      for (int c = 0; c < n; ++c) row[c] = T(0);
      return;
    }
    const T* from = wte + std::ptrdiff_t(t - vocab_begin) * n;
    TRIDENT_SIMD
    for (int c = 0; c < n; ++c) row[c] = from[c];
  }
};
template <class T>
struct TokenBackward {
  T* dwte;
  const T* dout;
  const std::int32_t* tokens;
  int N, C, vocab_begin, vocab_end, width;
  TRIDENT_HOST_DEVICE void operator()(int block) const {
    const ColumnBlock b = column_block(block, width, C);
    const int rows = N, cols = C, begin = b.begin, end = b.end, lo = vocab_begin, hi = vocab_end;
    for (int i = 0; i < rows; ++i) {
      const std::int32_t t = tokens[i];
      if (t < lo || t >= hi) continue;
      T* to = dwte + std::ptrdiff_t(t - lo) * cols;
      const T* from = dout + std::ptrdiff_t(i) * cols;
      TRIDENT_SIMD
      for (int c = begin; c < end; ++c) to[c] += from[c];
    }
  }
};
template <class T>
struct PositionForward {
  T* out;
  const T* wpe;
  int batch, t_begin, C;
  TokenPositions positions;
  TRIDENT_HOST_DEVICE void operator()(int i) const {
    const int n = C;
    const T* w = wpe + std::ptrdiff_t(positions(t_begin + i / batch)) * n;
    T* row = out + std::ptrdiff_t(i) * n;
    TRIDENT_SIMD
    for (int c = 0; c < n; ++c) row[c] += w[c];
  }
};
// the batch rows of local position s (contiguous in [s, b] order) summed into the row of its
// global position, dwpe[positions(t_begin + s)]
template <class T>
struct PositionBackward {
  T* dwpe;
  const T* dout;
  int batch, t_begin, C;
  TokenPositions positions;
  TRIDENT_HOST_DEVICE void operator()(int s) const {
    const int n = C, rows = batch;
    T* to = dwpe + std::ptrdiff_t(positions(t_begin + s)) * n;
    for (int b = 0; b < rows; ++b) {
      const T* from = dout + (std::ptrdiff_t(s) * rows + b) * n;
      TRIDENT_SIMD
      for (int c = 0; c < n; ++c) to[c] += from[c];
    }
  }
};
}  // namespace embedding_detail

// tokens: (N), wte: (vocab_end - vocab_begin, C) -> out: (N, C), overwritten
template <class Bk = backend::Cpu, class T>
void token_embedding_forward(T* out, const std::int32_t* tokens, const T* wte, int N, int C,
                             int vocab_begin, int vocab_end) {
  Bk::for_each(N, embedding_detail::TokenForward<T>{out, tokens, wte, C, vocab_begin, vocab_end});
}

// dout: (N, C), tokens: (N) -> dwte: (vocab_end - vocab_begin, C) +=
template <class Bk = backend::Cpu, class T>
void token_embedding_backward(T* dwte, const T* dout, const std::int32_t* tokens, int N, int C,
                              int vocab_begin, int vocab_end) {
  const int width = Bk::column_width(C);
  Bk::for_each(
      column_blocks(C, width),
      embedding_detail::TokenBackward<T>{dwte, dout, tokens, N, C, vocab_begin, vocab_end, width});
}

// wpe: (max positions, C) -> out: (rows, C) += wpe[positions(t_begin + i / batch)] for row i
// (positions: the identity without context parallelism, nn/positions.hpp)
template <class Bk = backend::Cpu, class T>
void position_embedding_forward(T* out, const T* wpe, int rows, int batch, int t_begin, int C,
                                TokenPositions positions = {}) {
  Bk::for_each(rows, embedding_detail::PositionForward<T>{out, wpe, batch, t_begin, C, positions});
}

// dout: (rows, C) -> dwpe: (max positions, C) += sum of the batch rows of each position;
// rows a multiple of batch.
template <class Bk = backend::Cpu, class T>
void position_embedding_backward(T* dwpe, const T* dout, int rows, int batch, int t_begin, int C,
                                 TokenPositions positions = {}) {
  Bk::for_each(rows / batch,
               embedding_detail::PositionBackward<T>{dwpe, dout, batch, t_begin, C, positions});
}

}  // namespace trident::nn
