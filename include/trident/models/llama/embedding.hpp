// trident/models/llama/embedding.hpp: Llama's embedding — the vocab-parallel token embedding
// (tp/vocab_parallel.hpp) with no learned positions (RoPE rotates q and k inside each block) —
// as the embedding of model/decoder_stage.hpp.
#pragma once

#include "../../data/tokens.hpp"
#include "../../tp/vocab_parallel.hpp"
#include "params.hpp"

namespace trident::llama {

template <class T>
class Embedding {
 public:
  Embedding(const Config& c, const TensorParallel& tp, int rows)
      : tp_(tp), B_(rows), N_(rows * c.seq), C_(c.hidden) {
    const ShardLayout table =
        layout_unit(units(c, tp.size())[0], tp.size(), tp.rank()).params[0].layout;
    embedding_ = {static_cast<int>(table.offset()), static_cast<int>(table.local_rows()), C_};
  }

  // The units it reads: "embed_tokens".
  static std::vector<UnitSpec> units(const Config& c, int tp) {
    return {vocab_unit("embed_tokens", c, tp)};
  }

  // x: (n, C) the embedded microbatch; w: the unit's parameters.
  void forward(T* x, const Microbatch& data, const T* const* w) const {
    Buffer<T> partial(MemoryKind::buffers, std::size_t(N_) * C_);
    embedding_.forward(tp_, x, partial.data(), data.inputs.data(), w[0], nullptr, N_, B_);
  }
  // dx: (n, C) the gradient of x; g: the unit's gradients (accumulate). Reads no parameters.
  void backward(T* const* g, const T* dx, const Microbatch& data) const {
    Buffer<T> dfull(MemoryKind::buffers, tp_.sequence_parallel ? std::size_t(N_) * C_ : 0);
    embedding_.backward(tp_, g[0], nullptr, dx, dfull.data(), data.inputs.data(), N_, B_);
  }

 private:
  const TensorParallel& tp_;
  int B_, N_, C_;
  VocabParallelEmbedding<T> embedding_;
};

}  // namespace trident::llama
