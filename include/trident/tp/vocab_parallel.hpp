// trident/tp/vocab_parallel.hpp: the vocabulary split over TP ranks (Megatron-LM §3, "input
// embedding" and "parallel cross-entropy").
//
// Rank r holds rows [vocab_begin, vocab_begin + rows) of the word embedding; the vocabulary is
// padded to a multiple of TP and padded rows never win (masked out of softmax and loss: the
// bug of Megatron-LM issue 1754). The LM head is tied to the same rows. Logits are never
// gathered: the softmax needs only an all-reduce of the row maxima and of the sums of
// exponentials, and the target logit comes from the rank that owns it.
//
// Each call has a raw-buffer form, on backend Bk's memory, and, on the CPU, a form on sharded
// tensors whose layouts are checked (a wrong placement throws Error naming the expected and the
// given layout), as in tp/linear.hpp.
#pragma once

#include <vector>

#include "../backend/device_buffer.hpp"
#include "../nn/backward_part.hpp"
#include "../nn/cross_entropy.hpp"
#include "../nn/embedding.hpp"
#include "../tensor/redistribute.hpp"
#include "tensor_parallel.hpp"

namespace trident {

template <class T, class Bk = backend::Cpu>
struct VocabParallelEmbedding {
  using TP = TensorParallel<Bk>;
  int vocab_begin = 0, rows = 0;  // this rank's rows of wte (padding included)
  int C = 0;

  // h: (n, C) = g(wte[tokens]) + wpe[t], t a token's global position (tp.positions: its
  // context-parallel chunk, cp/context_parallel.hpp); partial: (N, C) scratch; tokens: (N) in
  // [s, b] order. wpe null: no learned positions (a model with rotary embeddings); dwpe is then
  // null too.
  void forward(const TP& tp, T* h, T* partial, const std::int32_t* tokens, const T* wte,
               const T* wpe, int N, int B) const {
    nn::token_embedding_forward<Bk>(partial, tokens, wte, N, C, vocab_begin, vocab_begin + rows);
    const int n = tp.local_rows(N);
    tp.g_forward(h, partial, N, C);
    if (wpe)
      nn::position_embedding_forward<Bk>(h, wpe, n, B, first_position(tp, N, B), C,
                                         tp.positions(N / B));
  }
  // dh: (n, C); dh_full: (N, C) buffer used under SP. dwte, dwpe accumulate. The embedding has
  // no input gradient: all of its backward is weight gradient (zero-bubble's W).
  void backward(const TP& tp, T* dwte, T* dwpe, const T* dh, T* dh_full, const std::int32_t* tokens,
                int N, int B) const {
    const int n = tp.local_rows(N);
    if (dwpe)
      nn::position_embedding_backward<Bk>(dwpe, dh, n, B, first_position(tp, N, B), C,
                                          tp.positions(N / B));
    const T* d = tp.g_backward(dh, dh_full, N, C);
    nn::token_embedding_backward<Bk>(dwte, d, tokens, N, C, vocab_begin, vocab_begin + rows);
  }

  // On sharded tensors (layouts checked as tp/linear.hpp's): tokens (N) in [s, b] order, B
  // sequences; wte (V, C) Shard(0) padded to t * rows; wpe (seq, C) Replicate. Returns h (N, C)
  // in the activations' placement (Replicate, or Shard(0) under SP).
  ShardedTensor<T> forward(const TP& tp, const std::vector<std::int32_t>& tokens, int B,
                           ShardedView<const T> wte, ShardedView<const T> wpe) const {
    const int N = int(tokens.size());
    check(tp, wte, wpe, "");
    ShardedTensor<T> h(tp.layout(N, C, tp.activation_placement()));
    std::vector<T> partial(std::size_t(N) * C);
    forward(tp, h.local().data(), partial.data(), tokens.data(), wte.data, wpe.data, N, B);
    return h;
  }
  // dh: h's layout; dwte, dwpe (wte's, wpe's layouts) accumulate.
  void backward(const TP& tp, ShardedView<const T> dh, const std::vector<std::int32_t>& tokens,
                int B, ShardedView<T> dwte, ShardedView<T> dwpe) const {
    const int N = int(tokens.size());
    check(tp, dwte, dwpe, "d");
    expect_layout("VocabParallelEmbedding dh", dh.layout,
                  tp.layout(N, C, tp.activation_placement()));
    std::vector<T> dh_full(tp.sequence_parallel ? std::size_t(N) * C : 0);
    backward(tp, dwte.data, dwpe.data, dh.data, dh_full.data(), tokens.data(), N, B);
  }

  // Position of this rank's first row: 0, or the start of its sequence shard under SP.
  static int first_position(const TP& tp, int N, int B) {
    return tp.sequence_parallel ? tp.rank() * (N / B / tp.size()) : 0;
  }

 private:
  // Checks wte and wpe (or their gradients: d = "d").
  void check(const TP& tp, const ShardedView<const T>& wte, const ShardedView<const T>& wpe,
             const std::string& d) const {
    expect_layout(
        "VocabParallelEmbedding " + d + "wte", wte.layout,
        tp.layout(wte.layout.rows(), C, Placement::Shard(0), std::int64_t(rows) * tp.size()));
    expect_layout("VocabParallelEmbedding " + d + "wpe", wpe.layout,
                  tp.layout(wpe.layout.rows(), C, Placement::Replicate()));
  }
};

// LM head tied to the word embedding, and the loss: logits = h wte^T on this rank's vocab
// rows, then the vocab-parallel softmax cross-entropy.
template <class T, class Bk = backend::Cpu>
struct VocabParallelHead {
  using TP = TensorParallel<Bk>;
  int vocab_begin = 0, rows = 0;  // this rank's rows of wte (padding included)
  int vocab = 0;                  // the real vocabulary (columns >= vocab are padding)
  int C = 0;

  // h: (n, C); h_full: (N, C) buffer (SP); probs: (N, rows) softmax; losses: (N).
  // Returns the (N, C) input used — keep it for backward.
  const T* forward(const TP& tp, T* losses, T* probs, const T* h, T* h_full, const T* wte,
                   const std::int32_t* targets, int N) const {
    const T* used = tp.f_forward(h, h_full, N, C);
    Bk::gemm(false, true, N, rows, C, used, C, wte, C, T(0), probs, rows);  // logits, in place
    auto all_max = [&](T* x, int n) { tp.all_reduce(x, std::size_t(n), ReduceOp::max); };
    auto all_sum = [&](T* x, int n) { tp.all_reduce(x, std::size_t(n)); };
    nn::cross_entropy_forward<Bk>(losses, probs, probs, targets, N, rows, vocab_begin, vocab,
                                  all_max, all_sum);
    return used;
  }
  // Sampling: out (vocab) = wte h, the logits of one row h (C): this rank's vocab rows, then
  // all-gathered over TP (rank r holds rows [r rows, (r+1) rows)) and the padding dropped.
  // out is host memory; h and wte are Bk's.
  void logits(const TP& tp, T* out, const T* h, const T* wte) const {
    backend::DeviceBuffer<T, Bk> local(MemoryKind::buffers, rows, Fill::none),
        all(MemoryKind::buffers, std::size_t(rows) * tp.size(), Fill::none);
    Bk::gemm(false, true, 1, rows, C, h, C, wte, C, T(0), local.data(), rows);  // (1, rows)
    tp.all_gather(local.data(), all.data(), std::size_t(rows));
    Bk::to_host(out, all.data(), std::size_t(vocab) * sizeof(T));
  }
  // scale: d(loss)/d(each token's loss), 1 / tokens of the global batch. dlogits overwrites
  // probs. dh_full: (N, C) scratch; dh: (n, C). dwte accumulates. part: the input half (B)
  // writes dlogits into probs and dh; the weight half (W) reads dlogits and `used` for dwte.
  void backward(const TP& tp, T* dh, T* dh_full, T* dwte, T* probs, const std::int32_t* targets,
                const T* used, const T* wte, T scale, int N,
                nn::BackwardPart part = nn::BackwardPart::both) const {
    if (nn::computes_input(part))
      nn::cross_entropy_backward<Bk>(probs, probs, targets, scale, N, rows, vocab_begin);
    if (nn::computes_weights(part))  // dwte += dlogits^T used
      Bk::gemm(true, false, rows, C, N, probs, rows, used, C, T(1), dwte, C);
    if (!nn::computes_input(part)) return;
    Bk::gemm(false, false, N, C, rows, probs, rows, wte, C, T(0), dh_full, C);  // dlogits wte
    tp.f_backward(dh, dh_full, N, C);
  }

  // On sharded tensors (layouts checked): h (N, C) in the activations' placement; wte (vocab,
  // C) Shard(0) padded to t * rows; targets (N). Returns the losses (N) Replicate, and sets
  // probs to the softmax, (N, vocab) Shard(1) padded to t * rows: keep it for backward.
  ShardedTensor<T> forward(const TP& tp, ShardedView<const T> h, ShardedView<const T> wte,
                           const std::vector<std::int32_t>& targets,
                           ShardedTensor<T>& probs) const {
    const int N = check(tp, h, wte, targets);
    ShardedTensor<T> losses(tp.layout(N, 0, Placement::Replicate()));
    probs =
        ShardedTensor<T>(tp.layout(N, vocab, Placement::Shard(1), std::int64_t(rows) * tp.size()));
    std::vector<T> h_full(tp.sequence_parallel ? std::size_t(N) * C : 0);
    forward(tp, losses.local().data(), probs.local().data(), h.data, h_full.data(), wte.data,
            targets.data(), N);
    return losses;
  }
  // probs: forward's, overwritten by d(loss)/d(logits); scale as above; dwte (wte's layout)
  // accumulates. Returns dh in h's layout (under SP h is gathered again).
  ShardedTensor<T> backward(const TP& tp, ShardedView<const T> h, ShardedView<const T> wte,
                            const std::vector<std::int32_t>& targets, ShardedView<T> probs, T scale,
                            ShardedView<T> dwte) const {
    const int N = check(tp, h, wte, targets);
    expect_layout("VocabParallelHead probs", probs.layout,
                  tp.layout(N, vocab, Placement::Shard(1), std::int64_t(rows) * tp.size()));
    expect_layout("VocabParallelHead dwte", dwte.layout, wte.layout);
    std::vector<T> h_full(tp.sequence_parallel ? std::size_t(N) * C : 0),
        dh_full(std::size_t(N) * C);
    const T* used = tp.f_forward(h.data, h_full.data(), N, C);
    ShardedTensor<T> dh(h.layout);
    backward(tp, dh.local().data(), dh_full.data(), dwte.data, probs.data, targets.data(), used,
             wte.data, scale, N);
    return dh;
  }

 private:
  int check(const TP& tp, const ShardedView<const T>& h, const ShardedView<const T>& wte,
            const std::vector<std::int32_t>& targets) const {
    const int N = int(targets.size());
    expect_layout("VocabParallelHead h", h.layout, tp.layout(N, C, tp.activation_placement()));
    expect_layout("VocabParallelHead wte", wte.layout,
                  tp.layout(vocab, C, Placement::Shard(0), std::int64_t(rows) * tp.size()));
    return N;
  }
};

}  // namespace trident
