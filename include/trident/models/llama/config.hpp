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
  // Mixture of experts (models/llama/moe_mlp.hpp): E expert SwiGLU MLPs in place of the dense
  // one in layers 0, n, 2n, ... (Megatron-Core's --moe-layer-freq), each token routed to its
  // top-k experts (Switch: k = 1, Mixtral: k = 2); 0 experts: a dense model.
  int experts = 0;              // E
  int top_k = 1;                // k
  int moe_every = 1;            // n
  double aux_loss_coef = 0.01;  // alpha of the load-balancing loss (Switch Transformer eq. 4)
  int expert_ffn_size = 0;      // an expert's MLP width; 0: ffn()

  bool moe() const { return experts > 0; }
  bool is_moe(int layer) const { return moe() && layer % moe_every == 0; }
  int expert_ffn() const { return expert_ffn_size > 0 ? expert_ffn_size : ffn(); }
  int moe_layers() const { return moe() ? (layers + moe_every - 1) / moe_every : 0; }

  int head_size() const { return hidden / heads; }
  // The MLP's width: 2/3 of GPT-2's 4C, so that its three matrices cost what GPT-2's two do,
  // rounded up to a multiple of 32 (Touvron et al. 2023, "LLaMA", §2.2: SwiGLU with 2/3 4d),
  // unless ffn_size sets it (a published model's intermediate_size).
  int ffn() const { return ffn_size > 0 ? ffn_size : (8 * hidden / 3 + 31) / 32 * 32; }

  // V C (embedding) + L (C (H + 2 KV) D + H D C + 3 C F + 2 C) + C (final norm) + V C (LM head);
  // an MoE layer's MLP is C E (router) + E 3 C F_e instead of 3 C F.
  long long parameter_count() const {
    const long long C = hidden, D = head_size(), F = ffn(), E = experts, Fe = expert_ffn();
    const long long block = C * (heads + 2LL * kv_heads) * D + heads * D * C + 3 * C * F + 2 * C;
    const long long moe_extra = C * E + E * 3 * C * Fe - 3 * C * F;
    return 2LL * vocab * C + layers * block + moe_layers() * moe_extra + C;
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
    validate_experts();
    // gate/up (C, 2F), q and o (C, C), the vocabulary tables (V, C), the experts' (E C, 2 F_e)
    const long long C = hidden, E = experts;
    const long long largest = std::max({vocab * C, 2 * C * ffn(), C * C, E * C * 2 * expert_ffn()});
    require(largest <= kMaxElements, "the model's largest weight has " + s(largest) +
                                         " elements, more than 2^31 - 1 (vocab " + s(vocab) +
                                         ", hidden " + s(hidden) + ")");
  }
  static constexpr long long kMaxElements = 2147483647;

  void validate_experts() const {
    auto s = [](long long v) { return std::to_string(v); };
    require(experts >= 0 && expert_ffn_size >= 0, "the number of experts (" + s(experts) +
                                                      ") and their MLP width (" +
                                                      s(expert_ffn_size) + ") cannot be negative");
    if (!moe()) return;
    require(top_k == 1 || top_k == 2,
            "top-k is " + s(top_k) + ": each token goes to 1 (Switch) or 2 (Mixtral) experts");
    require(top_k <= experts, "top-k " + s(top_k) + " is larger than the " + s(experts) +
                                  " experts: a token cannot pick more experts than there are");
    require(moe_every >= 1, "--moe-every is " + s(moe_every) + ": MoE every n-th layer, n >= 1");
    require(aux_loss_coef >= 0,
            "the load-balancing loss coefficient must not be negative (Switch eq. 4's alpha)");
  }
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
  if (c.moe())
    require(c.expert_ffn() % tp == 0, "the experts' MLP width " + s(c.expert_ffn()) +
                                          " is not divisible by TP=" + s(tp) +
                                          " (each rank holds a slice of every expert)");
  if (sequence_parallel)
    require(c.seq % tp == 0, "sequence parallelism needs the sequence length " + s(c.seq) +
                                 " to be divisible by TP=" + s(tp));
}

}  // namespace trident::llama
