// trident/models/gpt2/head.hpp: GPT-2's head — the final LayerNorm, the LM head tied to the word
// embedding (Press & Wolf 2017) and the vocab-parallel cross-entropy — as the head of
// model/decoder_stage.hpp, on backend B. Sizes: N rows, n = tp.local_rows(N), C hidden. The
// microbatch's summed loss crosses to the host once (DeviceLoss, data/tokens.hpp).
#pragma once

#include "../../data/tokens.hpp"
#include "../../nn/layernorm.hpp"
#include "../../tp/vocab_parallel.hpp"
#include "params.hpp"

namespace trident::gpt2 {

template <class T, class B>
class Head {
  using Buf = backend::DeviceBuffer<T, B>;

 public:
  // What the backward needs from the forward, per microbatch.
  struct Activations {
    Buf lnf_mean, lnf_rstd;  // (n)
    Buf lnf;                 // (N, C) the LM head's input (gathered under SP)
    Buf probs;               // (N, vocab rows) softmax, then dlogits (kept from B to W)
  };

  Head(const Config& c, const TensorParallel<B>& tp, int rows)
      : tp_(tp), B_(rows), N_(rows * tp.local_seq(c.seq)), C_(c.hidden) {
    const ShardLayout wte =
        layout_unit(wte_unit(c, tp.size()), tp.size(), tp.rank()).params[0].layout;
    head_ = {static_cast<int>(wte.offset()), static_cast<int>(wte.local_rows()), c.vocab, c.hidden};
  }

  // The units it reads, in order: "ln_f", "wte" (the tied word embedding).
  static std::vector<UnitSpec> units(const Config& c, int tp) {
    return {ln_f_unit(c), wte_unit(c, tp)};
  }

  // x: (n, C) the last block's output; targets: (N) in B's memory; w: the units' parameters.
  // losses: (N) in B's memory, each token's loss (the caller sums them).
  void forward(Activations& a, T* losses, const T* x, const std::int32_t* targets,
               const T* const* w) const {
    const int N = N_, n = tp_.local_rows(N), C = C_;
    auto act = [&](Buf& b, std::size_t size) {  // overwritten below: not zeroed
      b.allocate(MemoryKind::activations, size, Fill::none);
    };
    act(a.lnf_mean, n), act(a.lnf_rstd, n), act(a.lnf, std::size_t(N) * C);
    act(a.probs, std::size_t(N) * head_.rows);
    Buf local(MemoryKind::buffers, tp_.sequence_parallel ? std::size_t(n) * C : 0, Fill::none);
    T* out = tp_.sequence_parallel ? local.data() : a.lnf.data();
    const T* lnf = w[0];
    nn::layernorm_forward<B>(out, a.lnf_mean.data(), a.lnf_rstd.data(), x, lnf, lnf + C, n, C);
    head_.forward(tp_, losses, a.probs.data(), out, a.lnf.data(), w[1], targets, N);
  }

  // Sampling: out (vocab, host memory) the next-token logits after token `position` of row 0 of
  // x (n, C), the same on every TP rank.
  void logits(const T* x, int position, const T* const* w, T* out) const {
    const int N = N_, n = tp_.local_rows(N), C = C_;
    Buf mean(MemoryKind::buffers, n, Fill::none), rstd(MemoryKind::buffers, n, Fill::none),
        lnf(MemoryKind::buffers, std::size_t(n) * C, Fill::none),
        full(MemoryKind::buffers, tp_.sequence_parallel ? std::size_t(N) * C : 0, Fill::none);
    nn::layernorm_forward<B>(lnf.data(), mean.data(), rstd.data(), x, w[0], w[0] + C, n, C);
    const T* rows = tp_.f_forward(lnf.data(), full.data(), N, C);         // (N, C)
    head_.logits(tp_, out, rows + std::size_t(position) * B_ * C, w[1]);  // [s, b]: row t B
  }

  // dx: (n, C) the gradient of x (written by the input half); targets: (N) in B's memory; w:
  // the parameters (input half only); g: the gradients (accumulate). part as nn::BackwardPart:
  // the input half also takes LN_f's gradients (cheap), the weight half only the LM head's
  // (from probs and lnf).
  void backward(Activations& a, T* dx, const T* x, const std::int32_t* targets, const T* const* w,
                T* const* g, T scale, nn::BackwardPart part) const {
    const int N = N_, n = tp_.local_rows(N), C = C_;
    const bool in = nn::computes_input(part);
    Buf dfull(MemoryKind::buffers, in && tp_.sequence_parallel ? std::size_t(N) * C : 0,
              Fill::none),
        dln(MemoryKind::buffers, in ? std::size_t(n) * C : 0, Fill::none);  // LN_f's dy
    head_.backward(tp_, dln.data(), tp_.sequence_parallel ? dfull.data() : dln.data(), g[1],
                   a.probs.data(), targets, a.lnf.data(), w ? w[1] : nullptr, scale, N, part);
    if (!in) return;
    nn::layernorm_backward<B>(dx, g[0], g[0] + C, dln.data(), x, w[0], a.lnf_mean.data(),
                              a.lnf_rstd.data(), n, C);
    if (part == nn::BackwardPart::input) a.lnf_mean.reset(), a.lnf_rstd.reset();
  }

 private:
  const TensorParallel<B>& tp_;
  int B_, N_, C_;
  VocabParallelHead<T, B> head_;
};

}  // namespace trident::gpt2
