// trident/models/gpt2/head.hpp: GPT-2's head — the final LayerNorm, the LM head tied to the word
// embedding (Press & Wolf 2017) and the vocab-parallel cross-entropy — as the head of
// model/decoder_stage.hpp. Sizes: N rows, n = tp.local_rows(N), C hidden.
#pragma once

#include "../../data/tokens.hpp"
#include "../../nn/layernorm.hpp"
#include "../../tp/vocab_parallel.hpp"
#include "params.hpp"

namespace trident::gpt2 {

template <class T>
class Head {
 public:
  // What the backward needs from the forward, per microbatch.
  struct Activations {
    Buffer<T> lnf_mean, lnf_rstd;  // (n)
    Buffer<T> lnf;                 // (N, C) the LM head's input (gathered under SP)
    Buffer<T> probs;               // (N, vocab rows) softmax, then dlogits (kept from B to W)
  };

  Head(const Config& c, const TensorParallel& tp, int rows)
      : tp_(tp), B_(rows), N_(rows * c.seq), C_(c.hidden) {
    const ShardLayout wte =
        layout_unit(wte_unit(c, tp.size()), tp.size(), tp.rank()).params[0].layout;
    head_ = {static_cast<int>(wte.offset()), static_cast<int>(wte.local_rows()), c.vocab, c.hidden};
  }

  // The units it reads, in order: "ln_f", "wte" (the tied word embedding).
  static std::vector<UnitSpec> units(const Config& c, int tp) {
    return {ln_f_unit(c), wte_unit(c, tp)};
  }

  // x: (n, C) the last block's output; w: the units' parameters. Returns the microbatch's
  // summed loss times scale.
  double forward(Activations& a, const T* x, const Microbatch& data, const T* const* w,
                 T scale) const {
    const int N = N_, n = tp_.local_rows(N), C = C_;
    auto act = [&](Buffer<T>& b, std::size_t size) {  // overwritten below: not zeroed
      b.allocate(MemoryKind::activations, size, Fill::none);
    };
    act(a.lnf_mean, n), act(a.lnf_rstd, n), act(a.lnf, std::size_t(N) * C);
    act(a.probs, std::size_t(N) * head_.rows);
    Buffer<T> local(MemoryKind::buffers, tp_.sequence_parallel ? std::size_t(n) * C : 0),
        losses(MemoryKind::buffers, N);
    T* out = tp_.sequence_parallel ? local.data() : a.lnf.data();
    const T* lnf = w[0];
    nn::layernorm_forward(out, a.lnf_mean.data(), a.lnf_rstd.data(), x, lnf, lnf + C, n, C);
    head_.forward(tp_, losses.data(), a.probs.data(), out, a.lnf.data(), w[1], data.targets.data(),
                  N);
    double sum = 0;
    for (int i = 0; i < N; ++i) sum += losses[i];
    return sum * scale;
  }

  // Sampling: out (vocab) the next-token logits after token `position` of row 0 of x (n, C),
  // the same on every TP rank.
  void logits(const T* x, int position, const T* const* w, T* out) const {
    const int N = N_, n = tp_.local_rows(N), C = C_;
    Buffer<T> mean(MemoryKind::buffers, n), rstd(MemoryKind::buffers, n),
        lnf(MemoryKind::buffers, std::size_t(n) * C),
        full(MemoryKind::buffers, tp_.sequence_parallel ? std::size_t(N) * C : 0);
    nn::layernorm_forward(lnf.data(), mean.data(), rstd.data(), x, w[0], w[0] + C, n, C);
    const T* rows = tp_.f_forward(lnf.data(), full.data(), N, C);         // (N, C)
    head_.logits(tp_, out, rows + std::size_t(position) * B_ * C, w[1]);  // [s, b]: row t B
  }

  // dx: (n, C) the gradient of x (written by the input half); w: the parameters (input half
  // only); g: the gradients (accumulate). part as nn::BackwardPart: the input half also takes
  // LN_f's gradients (cheap), the weight half only the LM head's (from probs and lnf).
  void backward(Activations& a, T* dx, const T* x, const Microbatch& data, const T* const* w,
                T* const* g, T scale, nn::BackwardPart part) const {
    const int N = N_, n = tp_.local_rows(N), C = C_;
    const bool in = nn::computes_input(part);
    Buffer<T> dfull(MemoryKind::buffers, in && tp_.sequence_parallel ? std::size_t(N) * C : 0,
                    Fill::none),
        dln(MemoryKind::buffers, in ? std::size_t(n) * C : 0, Fill::none);  // LN_f's dy
    head_.backward(tp_, dln.data(), tp_.sequence_parallel ? dfull.data() : dln.data(), g[1],
                   a.probs.data(), data.targets.data(), a.lnf.data(), w ? w[1] : nullptr, scale, N,
                   part);
    if (!in) return;
    nn::layernorm_backward(dx, g[0], g[0] + C, dln.data(), x, w[0], a.lnf_mean.data(),
                           a.lnf_rstd.data(), n, C);
    if (part == nn::BackwardPart::input) a.lnf_mean.reset(), a.lnf_rstd.reset();
  }

 private:
  const TensorParallel& tp_;
  int B_, N_, C_;
  VocabParallelHead<T> head_;
};

}  // namespace trident::gpt2
