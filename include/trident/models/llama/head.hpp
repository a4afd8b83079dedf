// trident/models/llama/head.hpp: Llama's head — the final RMSNorm, the untied LM head and the
// vocab-parallel cross-entropy (tp/vocab_parallel.hpp) — as the head of
// model/decoder_stage.hpp, on backend B. Sizes: N rows, n = tp.local_rows(N), C hidden.
#pragma once

#include "../../data/tokens.hpp"
#include "../../nn/rmsnorm.hpp"
#include "../../tp/vocab_parallel.hpp"
#include "params.hpp"

namespace trident::llama {

template <class T, class B>
class Head {
  using Buf = backend::DeviceBuffer<T, B>;

 public:
  // What the backward needs from the forward, per microbatch.
  struct Activations {
    Buf rstd;   // (n) the final RMSNorm's 1/rms
    Buf norm;   // (N, C) the LM head's input (gathered under SP)
    Buf probs;  // (N, vocab rows) softmax, then dlogits
    Buf dnorm;  // (n, C) the norm's output gradient, from B to W
  };

  Head(const Config& c, const TensorParallel<B>& tp, int rows)
      : tp_(tp), B_(rows), N_(rows * tp.local_seq(c.seq)), C_(c.hidden), eps_(T(c.norm_eps)) {
    const ShardLayout table =
        layout_unit(units(c, tp.size())[1], tp.size(), tp.rank()).params[0].layout;
    head_ = {static_cast<int>(table.offset()), static_cast<int>(table.local_rows()), c.vocab, C_};
  }

  // The units it reads, in order: "norm", "lm_head".
  static std::vector<UnitSpec> units(const Config& c, int tp) {
    return {norm_unit(c), vocab_unit("lm_head", c, tp)};
  }

  // x: (n, C) the last block's output; targets: (N) in B's memory; w: the units' parameters.
  // losses: (N) in B's memory, each token's loss.
  void forward(Activations& a, T* losses, const T* x, const std::int32_t* targets,
               const T* const* w) const {
    const int N = N_, n = tp_.local_rows(N);
    auto act = [&](Buf& b, std::size_t size) {  // overwritten below: not zeroed
      b.allocate(MemoryKind::activations, size, Fill::none);
    };
    act(a.rstd, n), act(a.norm, std::size_t(N) * C_), act(a.probs, std::size_t(N) * head_.rows);
    Buf local(MemoryKind::buffers, tp_.sequence_parallel ? std::size_t(n) * C_ : 0, Fill::none);
    T* out = tp_.sequence_parallel ? local.data() : a.norm.data();
    nn::rmsnorm_forward<B>(out, a.rstd.data(), x, w[0], n, C_, eps_);
    head_.forward(tp_, losses, a.probs.data(), out, a.norm.data(), w[1], targets, N);
  }

  // Sampling: out (vocab, host memory) the next-token logits after token `position` of row 0 of
  // x (n, C), the same on every TP rank.
  void logits(const T* x, int position, const T* const* w, T* out) const {
    const int N = N_, n = tp_.local_rows(N);
    Buf rstd(MemoryKind::buffers, n, Fill::none),
        norm(MemoryKind::buffers, std::size_t(n) * C_, Fill::none),
        full(MemoryKind::buffers, tp_.sequence_parallel ? std::size_t(N) * C_ : 0, Fill::none);
    nn::rmsnorm_forward<B>(norm.data(), rstd.data(), x, w[0], n, C_, eps_);
    const T* rows = tp_.f_forward(norm.data(), full.data(), N, C_);        // (N, C)
    head_.logits(tp_, out, rows + std::size_t(position) * B_ * C_, w[1]);  // [s, b]: row t B
  }

  // dx: (n, C) the gradient of x (written by the input half); targets: (N) in B's memory; w: the
  // parameters (input half only); g: the gradients (weight half only, accumulate). part as
  // nn::BackwardPart.
  void backward(Activations& a, T* dx, const T* x, const std::int32_t* targets, const T* const* w,
                T* const* g, T scale, nn::BackwardPart part) const {
    const int N = N_, n = tp_.local_rows(N);
    const bool in = nn::computes_input(part);
    Buf dfull(MemoryKind::buffers, in && tp_.sequence_parallel ? std::size_t(N) * C_ : 0,
              Fill::none);
    if (in)  // written whole by the head's input half
      a.dnorm.allocate(
          part == nn::BackwardPart::both ? MemoryKind::buffers : MemoryKind::activations,
          std::size_t(n) * C_, Fill::none);
    T* dnorm = a.dnorm.data();
    head_.backward(tp_, dnorm, tp_.sequence_parallel ? dfull.data() : dnorm, g ? g[1] : nullptr,
                   a.probs.data(), targets, a.norm.data(), w ? w[1] : nullptr, scale, N, part);
    nn::rmsnorm_backward<B>(dx, g ? g[0] : nullptr, dnorm, x, w ? w[0] : nullptr, a.rstd.data(), n,
                            C_, part);
  }

 private:
  const TensorParallel<B>& tp_;
  int B_, N_, C_;
  T eps_;
  VocabParallelHead<T, B> head_;
};

}  // namespace trident::llama
