// trident/models/gpt2/config.hpp: the GPT-2-style decoder's shape and its checks.
#pragma once

#include <algorithm>
#include <string>

#include "../../core/error.hpp"
#include "../../plan/model_spec.hpp"

namespace trident::gpt2 {

struct Config {
  int vocab = 256;  // V: tokens (byte-level by default)
  int seq = 64;     // T: context length (rows of the position table) = training length
  int layers = 4;   // L
  int hidden = 64;  // C (h in Megatron's papers); the MLP is 4C wide
  int heads = 4;    // H; head size C / H
  unsigned long long seed = 1234;  // initialisation (models/gpt2/params.hpp)

  int head_size() const { return hidden / heads; }

  // Parameters of the decoder: V C + T C + L (12 C^2 + 13 C) + 2 C (LM head tied to wte).
  long long parameter_count() const {
    const long long C = hidden;
    return vocab * C + seq * C + layers * (12 * C * C + 13 * C) + 2 * C;
  }

  void validate() const {
    auto s = [](long long v) { return std::to_string(v); };
    require(vocab >= 1 && seq >= 1 && layers >= 1 && hidden >= 1 && heads >= 1,
            "model sizes must be at least 1 (vocab " + s(vocab) + ", seq " + s(seq) + ", layers " +
                s(layers) + ", hidden " + s(hidden) + ", heads " + s(heads) + ")");
    require(hidden % heads == 0,
            "hidden size " + s(hidden) + " is not divisible by the " + s(heads) + " heads");
    // one tensor's elements travel in one MPI call, whose counts are int
    const long long C = hidden, largest = std::max({vocab * C, seq * C, 4 * C * C});
    require(largest <= kMaxElements, "the model's largest weight has " + s(largest) +
                                         " elements, more than 2^31 - 1 (vocab " + s(vocab) +
                                         ", seq " + s(seq) + ", hidden " + s(hidden) + ")");
  }
  static constexpr long long kMaxElements = 2147483647;
};

// The cost model's view of the shape (plan/).
inline plan::ModelSpec model_spec(const Config& c, std::string name = "trident") {
  return {std::move(name), c.layers, c.hidden, c.heads, c.vocab, c.seq};
}

// Tensor parallelism's requirements on the model; the same Error on every rank.
inline void validate_tensor_parallel(const Config& c, int tp, bool sequence_parallel) {
  auto s = [](long long v) { return std::to_string(v); };
  require(tp >= 1, "TP must be at least 1");
  require(tp <= c.heads,
          "TP=" + s(tp) + " is larger than the " + s(c.heads) + " attention heads to split");
  require(c.heads % tp == 0,
          "the " + s(c.heads) + " attention heads are not divisible by TP=" + s(tp));
  require(c.hidden % tp == 0, "hidden size " + s(c.hidden) + " is not divisible by TP=" + s(tp));
  if (sequence_parallel)
    require(c.seq % tp == 0, "sequence parallelism needs the sequence length " + s(c.seq) +
                                 " to be divisible by TP=" + s(tp));
}

}  // namespace trident::gpt2
