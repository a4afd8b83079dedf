// trident/nn/embedding.hpp: GPT-2's token and learned position embeddings (wte, wpe).
//
// The token table may be split by rows over ranks, as Megatron's vocab-parallel embedding
// (Shoeybi et al., "Megatron-LM", 2019): a rank holds the rows of vocabulary ids
// [vocab_begin, vocab_end) and writes zeros for tokens outside them, so that summing the outputs
// of all ranks gives the full lookup. Rows are tokens in [s, b] order: row i is position
// t_begin + i / B, which lets a rank hold a contiguous slice of the sequence.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>

#include <trident/nn/column_blocks.hpp>

namespace trident::nn {

// tokens: (N), wte: (vocab_end - vocab_begin, C) -> out: (N, C), overwritten
template <class T>
void token_embedding_forward(T* out, const std::int32_t* tokens, const T* wte, int N, int C,
                             int vocab_begin, int vocab_end) {
#pragma omp parallel for
  for (int i = 0; i < N; ++i) {
    T* row = out + static_cast<std::ptrdiff_t>(i) * C;
    const std::int32_t t = tokens[i];
    if (t >= vocab_begin && t < vocab_end)
      std::copy_n(wte + static_cast<std::ptrdiff_t>(t - vocab_begin) * C, C, row);
    else
      std::fill_n(row, C, T(0));
  }
}

// dout: (N, C), tokens: (N) -> dwte: (vocab_end - vocab_begin, C) +=
// Rows of one token are summed; threads own column blocks, so repeated tokens cannot race.
template <class T>
void token_embedding_backward(T* dwte, const T* dout, const std::int32_t* tokens, int N, int C,
                              int vocab_begin, int vocab_end) {
  for_column_blocks(C, [&](int c0, int c1) {
    for (int i = 0; i < N; ++i) {
      const std::int32_t t = tokens[i];
      if (t < vocab_begin || t >= vocab_end) continue;
      T* to = dwte + static_cast<std::ptrdiff_t>(t - vocab_begin) * C;
      const T* from = dout + static_cast<std::ptrdiff_t>(i) * C;
      for (int c = c0; c < c1; ++c) to[c] += from[c];
    }
  });
}

// wpe: (max positions, C) -> out: (rows, C) += wpe[t_begin + i / B] for row i
template <class T>
void position_embedding_forward(T* out, const T* wpe, int rows, int B, int t_begin, int C) {
#pragma omp parallel for
  for (int i = 0; i < rows; ++i) {
    const T* w = wpe + static_cast<std::ptrdiff_t>(t_begin + i / B) * C;
    T* row = out + static_cast<std::ptrdiff_t>(i) * C;
    for (int c = 0; c < C; ++c) row[c] += w[c];
  }
}

// dout: (rows, C) -> dwpe: (max positions, C) += sum of the B rows of each position
// Rows of one position are contiguous ([s, b] order): each thread owns whole positions.
template <class T>
void position_embedding_backward(T* dwpe, const T* dout, int rows, int B, int t_begin, int C) {
  assert(rows % B == 0 && "position_embedding_backward: rows must be a multiple of B");
  const int positions = rows / B;
#pragma omp parallel for
  for (int s = 0; s < positions; ++s) {
    T* to = dwpe + static_cast<std::ptrdiff_t>(t_begin + s) * C;
    for (int b = 0; b < B; ++b) {
      const T* from = dout + (static_cast<std::ptrdiff_t>(s) * B + b) * C;
      for (int c = 0; c < C; ++c) to[c] += from[c];
    }
  }
}

}  // namespace trident::nn
