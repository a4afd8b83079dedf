// trident/models/llama/embedding.hpp: Llama's embedding — the vocab-parallel token embedding
// (tp/vocab_parallel.hpp) with no learned positions (RoPE rotates q and k inside each block) —
// as the embedding of model/decoder_stage.hpp, on backend B.
#pragma once

#include "../../data/tokens.hpp"
#include "../../tp/vocab_parallel.hpp"
#include "params.hpp"

namespace trident::llama {

template <class T, class B>
class Embedding {
  using Buf = backend::DeviceBuffer<T, B>;

 public:
  Embedding(const Config& c, const TensorParallel<B>& tp, int rows)
      : tp_(tp), B_(rows), N_(rows * tp.local_seq(c.seq)), C_(c.hidden) {
    const ShardLayout table =
        layout_unit(units(c, tp.size())[0], tp.size(), tp.rank()).params[0].layout;
    embedding_ = {static_cast<int>(table.offset()), static_cast<int>(table.local_rows()), C_};
  }

  // The units it reads: "embed_tokens".
  static std::vector<UnitSpec> units(const Config& c, int tp) {
    return {vocab_unit("embed_tokens", c, tp)};
  }

  // x: (n, C) the embedded microbatch; tokens: (N) in B's memory; w: the unit's parameters.
  void forward(T* x, const std::int32_t* tokens, const T* const* w) const {
    Buf partial(MemoryKind::buffers, std::size_t(N_) * C_, Fill::none);  // written whole
    embedding_.forward(tp_, x, partial.data(), tokens, w[0], nullptr, N_, B_);
  }
  // dx: (n, C) the gradient of x; g: the unit's gradients (accumulate). Reads no parameters.
  void backward(T* const* g, const T* dx, const std::int32_t* tokens) const {
    Buf dfull(MemoryKind::buffers, tp_.sequence_parallel ? std::size_t(N_) * C_ : 0, Fill::none);
    embedding_.backward(tp_, g[0], nullptr, dx, dfull.data(), tokens, N_, B_);
  }

 private:
  const TensorParallel<B>& tp_;
  int B_, N_, C_;
  VocabParallelEmbedding<T, B> embedding_;
};

}  // namespace trident::llama
