// trident/tp/vocab_parallel.hpp: the vocabulary split over TP ranks (Megatron-LM §3, "input
// embedding" and "parallel cross-entropy").
//
// Rank r holds rows [vocab_begin, vocab_begin + rows) of the word embedding; the vocabulary is
// padded to a multiple of TP and padded rows never win (masked out of softmax and loss: the
// bug of Megatron-LM issue 1754). The LM head is tied to the same rows. Logits are never
// gathered: the softmax needs only an all-reduce of the row maxima and of the sums of
// exponentials, and the target logit comes from the rank that owns it.
#pragma once

#include "../backend/cpu/gemm.hpp"
#include "../nn/backward_part.hpp"
#include "../nn/cross_entropy.hpp"
#include "../nn/embedding.hpp"
#include "tensor_parallel.hpp"

namespace trident {

template <class T>
struct VocabParallelEmbedding {
  int vocab_begin = 0, rows = 0;  // this rank's rows of wte (padding included)
  int C = 0;

  // h: (n, C) = g(wte[tokens]) + wpe[t]; partial: (N, C) scratch; tokens: (N) in [s, b] order.
  // wpe null: no learned positions (a model with rotary embeddings); dwpe is then null too.
  void forward(const TensorParallel& tp, T* h, T* partial, const std::int32_t* tokens, const T* wte,
               const T* wpe, int N, int B) const {
    nn::token_embedding_forward(partial, tokens, wte, N, C, vocab_begin, vocab_begin + rows);
    const int n = tp.local_rows(N);
    tp.exit(h, partial, std::size_t(n) * C);
    if (wpe) nn::position_embedding_forward(h, wpe, n, B, first_position(tp, N, B), C);
  }
  // dh: (n, C); dh_full: (N, C) buffer used under SP. dwte, dwpe accumulate. The embedding has
  // no input gradient: all of its backward is weight gradient (zero-bubble's W).
  void backward(const TensorParallel& tp, T* dwte, T* dwpe, const T* dh, T* dh_full,
                const std::int32_t* tokens, int N, int B) const {
    const int n = tp.local_rows(N);
    if (dwpe) nn::position_embedding_backward(dwpe, dh, n, B, first_position(tp, N, B), C);
    const T* d = tp.exit_backward(dh, dh_full, std::size_t(n) * C);
    nn::token_embedding_backward(dwte, d, tokens, N, C, vocab_begin, vocab_begin + rows);
  }
  // Position of this rank's first row: 0, or the start of its sequence shard under SP.
  static int first_position(const TensorParallel& tp, int N, int B) {
    return tp.sequence_parallel ? tp.rank() * (N / B / tp.size()) : 0;
  }
};

// LM head tied to the word embedding, and the loss: logits = h wte^T on this rank's vocab
// rows, then the vocab-parallel softmax cross-entropy.
template <class T>
struct VocabParallelHead {
  int vocab_begin = 0, rows = 0;  // this rank's rows of wte (padding included)
  int vocab = 0;                  // the real vocabulary (columns >= vocab are padding)
  int C = 0;

  // h: (n, C); h_full: (N, C) buffer (SP); probs: (N, rows) softmax; losses: (N).
  // Returns the (N, C) input used — keep it for backward.
  const T* forward(const TensorParallel& tp, T* losses, T* probs, const T* h, T* h_full,
                   const T* wte, const std::int32_t* targets, int N) const {
    const T* used = tp.enter(h, h_full, std::size_t(tp.local_rows(N)) * C);
    backend::gemm(backend::view(probs, N, rows), backend::cview(used, N, C),
                  backend::cview(wte, rows, C), false, true, T(0));  // logits, in place
    auto all_max = [&](T* x, int n) { tp.comm->all_reduce(Span<T>(x, n), ReduceOp::max); };
    auto all_sum = [&](T* x, int n) { tp.comm->all_reduce(Span<T>(x, n)); };
    nn::cross_entropy_forward(losses, probs, probs, targets, N, rows, vocab_begin, vocab, all_max,
                              all_sum);
    return used;
  }
  // Sampling: out (vocab) = wte h, the logits of one row h (C): this rank's vocab rows, then
  // all-gathered over TP (rank r holds rows [r rows, (r+1) rows)) and the padding dropped.
  void logits(const TensorParallel& tp, T* out, const T* h, const T* wte) const {
    std::vector<T> local(rows), all(std::size_t(rows) * tp.size());
    for (int v = 0; v < rows; ++v) {
      T dot = 0;
      for (int c = 0; c < C; ++c) dot += wte[std::size_t(v) * C + c] * h[c];
      local[v] = dot;
    }
    tp.comm->all_gather(Span<const T>(local.data(), local.size()), Span<T>(all.data(), all.size()));
    std::copy_n(all.data(), vocab, out);
  }
  // scale: d(loss)/d(each token's loss), 1 / tokens of the global batch. dlogits overwrites
  // probs. dh_full: (N, C) scratch; dh: (n, C). dwte accumulates. part: the input half (B)
  // writes dlogits into probs and dh; the weight half (W) reads dlogits and `used` for dwte.
  void backward(const TensorParallel& tp, T* dh, T* dh_full, T* dwte, T* probs,
                const std::int32_t* targets, const T* used, const T* wte, T scale, int N,
                nn::BackwardPart part = nn::BackwardPart::both) const {
    if (nn::computes_input(part))
      nn::cross_entropy_backward(probs, probs, targets, scale, N, rows, vocab_begin);
    if (nn::computes_weights(part))
      backend::gemm(backend::view(dwte, rows, C), backend::cview(probs, N, rows),
                    backend::cview(used, N, C), true, false, T(1));
    if (!nn::computes_input(part)) return;
    backend::gemm(backend::view(dh_full, N, C), backend::cview(probs, N, rows),
                  backend::cview(wte, rows, C), false, false, T(0));
    tp.enter_backward(dh, dh_full, std::size_t(tp.local_rows(N)) * C);
  }
};

}  // namespace trident
