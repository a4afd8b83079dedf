// trident/models/gpt2/embedding.hpp: GPT-2's embedding — the vocab-parallel word embedding plus
// learned positions (tp/vocab_parallel.hpp) — as the embedding of model/decoder_stage.hpp, on
// backend B (the microbatch's token ids come uploaded: Microbatch's device copy, data/tokens.hpp).
#pragma once

#include "../../data/tokens.hpp"
#include "../../tp/vocab_parallel.hpp"
#include "params.hpp"

namespace trident::gpt2 {

template <class T, class B>
class Embedding {
  using Buf = backend::DeviceBuffer<T, B>;

 public:
  Embedding(const Config& c, const TensorParallel<B>& tp, int rows)
      : tp_(tp), B_(rows), N_(rows * tp.local_seq(c.seq)), C_(c.hidden) {
    const ShardLayout wte =
        layout_unit(wte_unit(c, tp.size()), tp.size(), tp.rank()).params[0].layout;
    embedding_ = {static_cast<int>(wte.offset()), static_cast<int>(wte.local_rows()), c.hidden};
  }

  // The units it reads, in order: "wte", "wpe".
  static std::vector<UnitSpec> units(const Config& c, int tp) {
    return {wte_unit(c, tp), wpe_unit(c)};
  }

  // x: (n, C) the embedded microbatch; tokens: (N) the inputs in B's memory; w: the units'
  // parameters, in units() order.
  void forward(T* x, const std::int32_t* tokens, const T* const* w) const {
    Buf partial(MemoryKind::buffers, std::size_t(N_) * C_, Fill::none);  // written whole
    embedding_.forward(tp_, x, partial.data(), tokens, w[0], w[1], N_, B_);
  }
  // dx: (n, C) the gradient of x; g: the units' gradients (accumulate). Reads no parameters.
  void backward(T* const* g, const T* dx, const std::int32_t* tokens) const {
    Buf dfull(MemoryKind::buffers, tp_.sequence_parallel ? std::size_t(N_) * C_ : 0, Fill::none);
    embedding_.backward(tp_, g[0], g[1], dx, dfull.data(), tokens, N_, B_);
  }

 private:
  const TensorParallel<B>& tp_;
  int B_, N_, C_;
  VocabParallelEmbedding<T, B> embedding_;
};

}  // namespace trident::gpt2
