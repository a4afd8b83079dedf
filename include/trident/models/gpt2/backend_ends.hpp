// trident/models/gpt2/backend_ends.hpp: the two ends of GPT-2 written against a backend type B —
// the embedding (word plus learned positions) and the head (final LayerNorm, the LM head tied to
// the word embedding (Press & Wolf 2017), softmax cross-entropy) — as the Embedding and Head of
// model/decoder_stage.hpp. The math of models/gpt2/embedding.hpp and head.hpp at TP = 1, from
// backend/kernels/ and B::gemm; activations, parameters and gradients in B's memory, the
// microbatch's token ids uploaded to it. Sizes: N = seq*Bs rows, C hidden, V vocab.
#pragma once

#include <cstdint>
#include <vector>

#include "../../backend/device_buffer.hpp"
#include "../../backend/kernels/cross_entropy.hpp"
#include "../../backend/kernels/embedding.hpp"
#include "../../backend/kernels/layernorm.hpp"
#include "../../data/tokens.hpp"
#include "../../nn/backward_part.hpp"
#include "params.hpp"

namespace trident {
struct TensorParallel;  // tp/tensor_parallel.hpp: unused at TP = 1
}  // namespace trident

namespace trident::gpt2 {

// Token ids (N) in B's memory.
template <class B>
backend::DeviceBuffer<std::int32_t, B> upload_tokens(const std::vector<std::int32_t>& ids) {
  backend::DeviceBuffer<std::int32_t, B> d(MemoryKind::buffers, ids.size(), Fill::none);
  backend::upload(d, ids.data());
  return d;
}

template <class T, class B>
class BackendEmbedding {
 public:
  BackendEmbedding(const Config& c, const TensorParallel&, int rows) : BackendEmbedding(c, rows) {}
  BackendEmbedding(const Config& c, int rows)
      : B_(rows), N_(rows * c.seq), C_(c.hidden), V_(c.vocab) {}

  // The units it reads, in order: "wte", "wpe".
  static std::vector<UnitSpec> units(const Config& c, int tp) {
    return {wte_unit(c, tp), wpe_unit(c)};
  }

  // x: (N, C) = wte[token] + wpe[position]; w: "wte", "wpe".
  void forward(T* x, const Microbatch& data, const T* const* w) const {
    const auto tokens = upload_tokens<B>(data.inputs);
    backend::kernels::token_embedding_forward<B>(x, tokens.data(), w[0], N_, C_, 0, V_);
    backend::kernels::position_embedding_forward<B>(x, w[1], N_, B_, 0, C_);
  }
  // dx: (N, C) the gradient of x; g: the units' gradients (accumulate).
  void backward(T* const* g, const T* dx, const Microbatch& data) const {
    const auto tokens = upload_tokens<B>(data.inputs);
    backend::kernels::token_embedding_backward<B>(g[0], dx, tokens.data(), N_, C_, 0, V_);
    backend::kernels::position_embedding_backward<B>(g[1], dx, N_, B_, 0, C_);
  }

 private:
  int B_, N_, C_, V_;
};

template <class T, class B>
class BackendHead {
  using Buf = backend::DeviceBuffer<T, B>;

 public:
  // What the backward needs from the forward, per microbatch.
  struct Activations {
    Buf lnf_mean, lnf_rstd;  // (N)
    Buf lnf;                 // (N, C) the LM head's input
    Buf probs;               // (N, V) logits, softmax, then their gradient
  };

  BackendHead(const Config& c, const TensorParallel&, int rows) : BackendHead(c, rows) {}
  BackendHead(const Config& c, int rows) : B_(rows), N_(rows * c.seq), C_(c.hidden), V_(c.vocab) {}

  // The units it reads, in order: "ln_f", "wte" (the tied word embedding).
  static std::vector<UnitSpec> units(const Config& c, int tp) {
    return {ln_f_unit(c), wte_unit(c, tp)};
  }

  // x: (N, C) the last block's output; w: "ln_f", "wte". Returns the summed loss times scale.
  double forward(Activations& a, const T* x, const Microbatch& data, const T* const* w,
                 T scale) const {
    const int N = N_, C = C_, V = V_;
    auto act = [](Buf& b, std::size_t size) {
      b.allocate(MemoryKind::activations, size, Fill::none);
    };
    act(a.lnf_mean, N), act(a.lnf_rstd, N), act(a.lnf, std::size_t(N) * C);
    act(a.probs, std::size_t(N) * V);
    backend::kernels::layernorm_forward<B>(a.lnf.data(), a.lnf_mean.data(), a.lnf_rstd.data(), x,
                                           w[0], w[0] + C, N, C);
    // logits: (N, V) = lnf wte^T, in place of the probabilities
    B::gemm(false, true, N, V, C, a.lnf.data(), C, w[1], C, T(0), a.probs.data(), V);
    const auto targets = upload_tokens<B>(data.targets);
    Buf losses(MemoryKind::buffers, N, Fill::none);
    backend::kernels::cross_entropy_forward<B>(losses.data(), a.probs.data(), a.probs.data(),
                                               targets.data(), N, V, 0, V);
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
    const int N = N_, C = C_, V = V_;
    const auto targets = upload_tokens<B>(data.targets);
    T* dlogits = a.probs.data();  // (N, V), in place: each element reads only its probability
    backend::kernels::cross_entropy_backward<B>(dlogits, a.probs.data(), targets.data(), scale, N,
                                                V, 0);
    B::gemm(true, false, V, C, N, dlogits, V, a.lnf.data(), C, T(1), g[1], C);  // dwte +=
    Buf dlnf(MemoryKind::buffers, std::size_t(N) * C, Fill::none);
    B::gemm(false, false, N, C, V, dlogits, V, w[1], C, T(0), dlnf.data(), C);  // dlnf = dl wte
    backend::kernels::layernorm_backward<B>(dx, g[0], g[0] + C, dlnf.data(), x, w[0],
                                            a.lnf_mean.data(), a.lnf_rstd.data(), N, C);
  }

  // Sampling: out (V, host memory) the next-token logits after token `position` of row 0 of x.
  void logits(const T* x, int position, const T* const* w, T* out) const {
    const int N = N_, C = C_, V = V_;
    Buf mean(MemoryKind::buffers, N, Fill::none), rstd(MemoryKind::buffers, N, Fill::none),
        lnf(MemoryKind::buffers, std::size_t(N) * C, Fill::none),
        row(MemoryKind::buffers, V, Fill::none);
    backend::kernels::layernorm_forward<B>(lnf.data(), mean.data(), rstd.data(), x, w[0], w[0] + C,
                                           N, C);
    const T* at = lnf.data() + std::size_t(position) * B_ * C;  // rows [s, b]: row position*B
    B::gemm(false, true, 1, V, C, at, C, w[1], C, T(0), row.data(), V);
    backend::download(row, out);
  }

 private:
  int B_, N_, C_, V_;
};

}  // namespace trident::gpt2
