// trident/models/gpt2/backend_ends.hpp: the two ends of GPT-2 written against a backend type B —
// the embedding (word plus learned positions) and the head (final LayerNorm, the LM head tied to
// the word embedding (Press & Wolf 2017), softmax cross-entropy) — as the Embedding and Head of
// model/decoder_stage.hpp. The math of models/gpt2/embedding.hpp and head.hpp, from
// backend/kernels/ and B::gemm; activations, parameters and gradients in B's memory, the
// microbatch's token ids uploaded to it. The word embedding is vocab-parallel over TP (Megatron-
// LM: rank r holds Vl rows from vocab_begin, padded): the embedding's partial rows are summed
// over TP, the head's cross-entropy sums three numbers per row (kernels/cross_entropy.hpp), and
// the head's input gradient is summed (f, backward), through BackendTp<B>; no sequence
// parallelism. Sizes: N = seq*Bs rows, C hidden, V vocab, Vl this rank's vocab rows.
#pragma once

#include <cstdint>
#include <vector>

#include "../../backend/device_buffer.hpp"
#include "../../backend/kernels/cross_entropy.hpp"
#include "../../backend/kernels/embedding.hpp"
#include "../../backend/kernels/layernorm.hpp"
#include "../../data/tokens.hpp"
#include "../../nn/backward_part.hpp"
#include "../../tp/backend_group.hpp"
#include "params.hpp"

namespace trident::gpt2 {

// Token ids (N) in B's memory.
template <class B>
backend::DeviceBuffer<std::int32_t, B> upload_tokens(const std::vector<std::int32_t>& ids) {
  backend::DeviceBuffer<std::int32_t, B> d(MemoryKind::buffers, ids.size(), Fill::none);
  backend::upload(d, ids.data());
  return d;
}

// This rank's rows of the (padded) vocab-parallel word embedding: [begin, begin + rows).
struct VocabSlice {
  int begin = 0, rows = 0;
};
inline VocabSlice vocab_slice(const Config& c, int tp, int rank) {
  const ShardLayout wte = layout_unit(wte_unit(c, tp), tp, rank).params[0].layout;
  return {static_cast<int>(wte.offset()), static_cast<int>(wte.local_rows())};
}

template <class T, class B>
class BackendEmbedding {
 public:
  BackendEmbedding(const Config& c, const TensorParallel& tp, int rows)
      : BackendEmbedding(c, rows, BackendTp<B>(tp)) {}
  BackendEmbedding(const Config& c, int rows, BackendTp<B> tp = {})
      : tp_(std::move(tp)),
        B_(rows),
        N_(rows * c.seq),
        C_(c.hidden),
        vocab_(vocab_slice(c, tp_.size(), tp_.rank())) {}

  // The units it reads, in order: "wte", "wpe".
  static std::vector<UnitSpec> units(const Config& c, int tp) {
    return {wte_unit(c, tp), wpe_unit(c)};
  }

  // x: (N, C) = wte[token] (summed over TP) + wpe[position]; w: "wte", "wpe".
  void forward(T* x, const Microbatch& data, const T* const* w) const {
    const auto tokens = upload_tokens<B>(data.inputs);
    backend::kernels::token_embedding_forward<B>(x, tokens.data(), w[0], N_, C_, vocab_.begin,
                                                 vocab_.begin + vocab_.rows);
    tp_.all_reduce(x, std::size_t(N_) * C_);
    backend::kernels::position_embedding_forward<B>(x, w[1], N_, B_, 0, C_);
  }
  // dx: (N, C) the gradient of x; g: the units' gradients (accumulate).
  void backward(T* const* g, const T* dx, const Microbatch& data) const {
    const auto tokens = upload_tokens<B>(data.inputs);
    backend::kernels::token_embedding_backward<B>(g[0], dx, tokens.data(), N_, C_, vocab_.begin,
                                                  vocab_.begin + vocab_.rows);
    backend::kernels::position_embedding_backward<B>(g[1], dx, N_, B_, 0, C_);
  }

 private:
  BackendTp<B> tp_;
  int B_, N_, C_;
  VocabSlice vocab_;
};

template <class T, class B>
class BackendHead {
  using Buf = backend::DeviceBuffer<T, B>;

 public:
  // What the backward needs from the forward, per microbatch.
  struct Activations {
    Buf lnf_mean, lnf_rstd;  // (N)
    Buf lnf;                 // (N, C) the LM head's input
    Buf probs;               // (N, Vl) logits, softmax, then their gradient
  };

  BackendHead(const Config& c, const TensorParallel& tp, int rows)
      : BackendHead(c, rows, BackendTp<B>(tp)) {}
  BackendHead(const Config& c, int rows, BackendTp<B> tp = {})
      : tp_(std::move(tp)),
        B_(rows),
        N_(rows * c.seq),
        C_(c.hidden),
        V_(c.vocab),
        vocab_(vocab_slice(c, tp_.size(), tp_.rank())) {}

  // The units it reads, in order: "ln_f", "wte" (the tied word embedding).
  static std::vector<UnitSpec> units(const Config& c, int tp) {
    return {ln_f_unit(c), wte_unit(c, tp)};
  }

  // x: (N, C) the last block's output; w: "ln_f", "wte". Returns the summed loss times scale.
  double forward(Activations& a, const T* x, const Microbatch& data, const T* const* w,
                 T scale) const {
    const int N = N_, C = C_, Vl = vocab_.rows;
    auto act = [](Buf& b, std::size_t size) {
      b.allocate(MemoryKind::activations, size, Fill::none);
    };
    act(a.lnf_mean, N), act(a.lnf_rstd, N), act(a.lnf, std::size_t(N) * C);
    act(a.probs, std::size_t(N) * Vl);
    backend::kernels::layernorm_forward<B>(a.lnf.data(), a.lnf_mean.data(), a.lnf_rstd.data(), x,
                                           w[0], w[0] + C, N, C);
    // logits: (N, Vl) = lnf wte_r^T, in place of the probabilities
    B::gemm(false, true, N, Vl, C, a.lnf.data(), C, w[1], C, T(0), a.probs.data(), Vl);
    const auto targets = upload_tokens<B>(data.targets);
    Buf losses(MemoryKind::buffers, N, Fill::none);
    backend::kernels::cross_entropy_forward<B>(
        losses.data(), a.probs.data(), a.probs.data(), targets.data(), N, Vl, vocab_.begin, V_,
        [&](T* m, int n) { tp_.all_reduce(m, n, ReduceOp::max); },
        [&](T* s, int n) { tp_.all_reduce(s, n); });
    std::vector<T> host(N);
    backend::download(losses, host.data());
    double sum = 0;
    for (T l : host) sum += l;
    return sum * scale;
  }

  // dx: (N, C) the gradient of x (overwritten); g: the gradients (accumulate); part: both.
  void backward(Activations& a, T* dx, const T* x, const Microbatch& data, const T* const* w,
                T* const* g, T scale, nn::BackwardPart part) const {
    require(part == nn::BackwardPart::both,
            "the backend GPT-2 head runs the fused backward only (no zero-bubble schedule)");
    const int N = N_, C = C_, Vl = vocab_.rows;
    const auto targets = upload_tokens<B>(data.targets);
    T* dlogits = a.probs.data();  // (N, Vl), in place: each element reads only its probability
    backend::kernels::cross_entropy_backward<B>(dlogits, a.probs.data(), targets.data(), scale, N,
                                                Vl, vocab_.begin);
    B::gemm(true, false, Vl, C, N, dlogits, Vl, a.lnf.data(), C, T(1), g[1], C);  // dwte_r +=
    Buf dlnf(MemoryKind::buffers, std::size_t(N) * C, Fill::none);
    B::gemm(false, false, N, C, Vl, dlogits, Vl, w[1], C, T(0), dlnf.data(), C);  // dl wte_r
    tp_.all_reduce(dlnf.data(), std::size_t(N) * C);                              // f, backward
    backend::kernels::layernorm_backward<B>(dx, g[0], g[0] + C, dlnf.data(), x, w[0],
                                            a.lnf_mean.data(), a.lnf_rstd.data(), N, C);
  }

  // Sampling: out (V, host memory) the next-token logits after token `position` of row 0 of x,
  // the same on every TP rank.
  void logits(const T* x, int position, const T* const* w, T* out) const {
    const int N = N_, C = C_, Vl = vocab_.rows;
    Buf mean(MemoryKind::buffers, N, Fill::none), rstd(MemoryKind::buffers, N, Fill::none),
        lnf(MemoryKind::buffers, std::size_t(N) * C, Fill::none),
        row(MemoryKind::buffers, Vl, Fill::none),
        all(MemoryKind::buffers, std::size_t(Vl) * tp_.size(), Fill::none);  // padded vocab
    backend::kernels::layernorm_forward<B>(lnf.data(), mean.data(), rstd.data(), x, w[0], w[0] + C,
                                           N, C);
    const T* at = lnf.data() + std::size_t(position) * B_ * C;  // rows [s, b]: row position*B
    B::gemm(false, true, 1, Vl, C, at, C, w[1], C, T(0), row.data(), Vl);
    tp_.all_gather(row.data(), all.data(), Vl);
    B::to_host(out, all.data(), std::size_t(V_) * sizeof(T));
  }

 private:
  BackendTp<B> tp_;
  int B_, N_, C_, V_;
  VocabSlice vocab_;
};

}  // namespace trident::gpt2
