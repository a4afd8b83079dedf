// trident/models/llama/config.hpp: the Llama-style decoder's shape and its checks.
#pragma once

#include <algorithm>
#include <string>

#include "../../core/error.hpp"

namespace trident::llama {

struct Config {
  int vocab = 256;   // V: tokens (byte-level by default)
  int seq = 64;      // T: context length = training length (RoPE positions 0 .. T-1)
  int layers = 4;    // L
  int hidden = 64;   // C; the SwiGLU MLP is ffn() wide
  int heads = 4;     // H query heads of D = C / H
  int kv_heads = 2;  // KV key/value heads, dividing H (grouped-query attention; KV = H: MHA)
  unsigned long long seed = 1234;  // initialisation (models/llama/params.hpp)
  double norm_eps = 1e-5;          // RMSNorm's epsilon (Llama 2)
  double rope_theta = 10000;       // RoPE's base (RoFormer, Llama 2)
  int ffn_size = 0;                // the MLP's width; 0: ffn()'s rule

  int head_size() const { return hidden / heads; }
  // The MLP's width: 2/3 of GPT-2's 4C, so that its three matrices cost what GPT-2's two do,
  // rounded up to a multiple of 32 (Touvron et al. 2023, "LLaMA", §2.2: SwiGLU with 2/3 4d),
  // unless ffn_size sets it (a published model's intermediate_size).
  int ffn() const { return ffn_size > 0 ? ffn_size : (8 * hidden / 3 + 31) / 32 * 32; }

  // V C (embedding) + L (C (H + 2 KV) D + H D C + 3 C F + 2 C) + C (final norm) + V C (LM head).
  long long parameter_count() const {
    const long long C = hidden, D = head_size(), F = ffn();
    const long long block = C * (heads + 2LL * kv_heads) * D + heads * D * C + 3 * C * F + 2 * C;
    return 2LL * vocab * C + layers * block + C;
  }

  void validate() const {
    auto s = [](long long v) { return std::to_string(v); };
    require(vocab >= 1 && seq >= 1 && layers >= 1 && hidden >= 1 && heads >= 1 && kv_heads >= 1 &&
                ffn_size >= 0,
            "model sizes must be at least 1 (vocab " + s(vocab) + ", seq " + s(seq) + ", layers " +
                s(layers) + ", hidden " + s(hidden) + ", heads " + s(heads) + ", kv heads " +
                s(kv_heads) + ", ffn " + s(ffn_size) + ")");
    require(rope_theta > 0 && norm_eps > 0, "RoPE's theta and RMSNorm's epsilon must be positive");
    require(hidden % heads == 0,
            "hidden size " + s(hidden) + " is not divisible by the " + s(heads) + " heads");
    require(head_size() % 2 == 0, "RoPE rotates pairs of features: the head size " +
                                      s(head_size()) + " (hidden " + s(hidden) + " / " + s(heads) +
                                      " heads) must be even");
    require(heads % kv_heads == 0, "the " + s(kv_heads) + " KV heads do not divide the " +
                                       s(heads) + " attention heads (grouped-query attention)");
    // gate/up (C, 2F), q and o (C, C), the vocabulary tables (V, C)
    const long long C = hidden, largest = std::max({vocab * C, 2 * C * ffn(), C * C});
    require(largest <= kMaxElements, "the model's largest weight has " + s(largest) +
                                         " elements, more than 2^31 - 1 (vocab " + s(vocab) +
                                         ", hidden " + s(hidden) + ")");
  }
  static constexpr long long kMaxElements = 2147483647;
};

// Tensor parallelism's requirements (Megatron-LM §3 with GQA: each rank holds H / TP query
// heads and the KV / TP key/value heads they read); the same Error on every rank.
inline void validate_tensor_parallel(const Config& c, int tp, bool sequence_parallel) {
  auto s = [](long long v) { return std::to_string(v); };
  require(tp >= 1, "TP must be at least 1");
  require(c.kv_heads % tp == 0, "the " + s(c.kv_heads) + " KV heads are not divisible by TP=" +
                                    s(tp) + " (each rank holds whole key/value heads)");
  require(c.heads % tp == 0,
          "the " + s(c.heads) + " attention heads are not divisible by TP=" + s(tp));
  require(c.hidden % tp == 0, "hidden size " + s(c.hidden) + " is not divisible by TP=" + s(tp));
  require(c.ffn() % tp == 0, "the MLP width " + s(c.ffn()) + " (hidden " + s(c.hidden) +
                                 ") is not divisible by TP=" + s(tp));
  if (sequence_parallel)
    require(c.seq % tp == 0, "sequence parallelism needs the sequence length " + s(c.seq) +
                                 " to be divisible by TP=" + s(tp));
}

}  // namespace trident::llama
