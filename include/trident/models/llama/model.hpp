// trident/models/llama/model.hpp: a Llama-style decoder (Touvron et al. 2023) as a model of
// model/model.hpp — a decoder stage (model/decoder_stage.hpp) with Llama's parts: the token
// embedding with no learned positions, pre-RMSNorm blocks of grouped-query attention with
// rotary position embeddings and a SwiGLU MLP, the final RMSNorm and an untied LM head (no ties).
#pragma once

#include <algorithm>

#include "../../model/decoder_model.hpp"
#include "../../plan/formulas.hpp"
#include "block.hpp"
#include "embedding.hpp"
#include "head.hpp"

namespace trident::llama {

class Model : public DecoderModel<Model, Config, Embedding, Block, Head> {
 public:
  using DecoderModel::DecoderModel;
  // Its parts read the context-parallel split from tp (cp/): --cp runs it over a ring.
  static constexpr bool kContextParallel = true;
  // Megatron's block (Shoeybi et al. 2019 §3): 2 all-reduces forward, 2 backward per layer,
  // the forward's 2 again with full recomputation; vocab-parallel embedding and head.
  static constexpr TpCollectives kTpCollectives = {
      plan::tp_all_reduces_per_layer(Recompute::none),
      plan::tp_all_reduces_per_layer(Recompute::full) -
          plan::tp_all_reduces_per_layer(Recompute::none),
      true};

  // --- model/model.hpp (the rest: model/decoder_model.hpp) ----------------------------------
  double initial_value(const ParamSpec& p, std::uint64_t index) const {
    return llama::initial_value(c_, p, index);
  }
  std::vector<Tie> ties(int) const { return {}; }  // the LM head is its own tensor
  // Experts per MoE layer (0: dense): the trainer's expert figures (train/expert_figures.hpp).
  int experts() const { return c_.experts; }
  // weight files in Hugging Face's layout (io/weights.hpp): a published checkpoint loads
  std::vector<FileTensor> file_tensors(const ParamSpec& p) const { return hf_tensors(p); }
  // Forward GEMM FLOPs of one sequence (pp/balance.hpp), 2 per multiply-add: per token
  // 2 C (H + 2 KV) D (q, k, v) + 2 H D C (o) + 2 C 2F (gate, up) + 2 F C (down) + 4 T H D
  // (scores and their product with v), and the LM head's 2 C V; the attention half is all of the
  // layer's but the MLP's 6 C F. An MoE layer's MLP: 2 C E (router) + k 6 C F_e (each token's k
  // experts); layers are priced alike, at the mean over the model's layers.
  pp::StageCosts stage_costs() const {
    const double T = c_.seq, C = c_.hidden, D = c_.head_size(), H = c_.heads, KV = c_.kv_heads,
                 F = c_.ffn(), V = c_.vocab, L = c_.layers, moe = c_.moe_layers();
    const double attention = T * (2 * C * (H + 2 * KV) * D + 2 * H * D * C + 4 * T * H * D);
    const double experts = 2 * C * c_.experts + c_.top_k * 6 * C * c_.expert_ffn();
    const double mlp = ((L - moe) * 6 * C * F + moe * experts) / L;
    return {attention + T * mlp, 0.0, T * 2 * C * V, attention};
  }

  // Elements of T one layer keeps per microbatch for its backward (models/llama/block.hpp's
  // BlockActivations): x and x2 (n C each), the RMSNorms' 1/rms (2 n), their outputs (N C each),
  // qkv (N (H + 2 KV)/t D), att (N H/t D), gate_up and act (3 N F/t), the attention
  // probabilities (b H/t s s_cp: not kept under selective recomputation, Korthikanti et al. 2022
  // §5); N = b s/cp rows, n = N/t under SP.
  // An MoE layer (the largest, when there is one) keeps instead of gate_up and act: the router's
  // probabilities (N E), the gates and the three routing index arrays (4 N k, the int32 ones
  // counted as elements), the per-sequence shares and losses (b (E + 1)), and its R = N k routed
  // rows' input and output (2 R C), gate/up and act (3 R F_e/t) (models/llama/moe_mlp.hpp).
  double layer_activation_elements(const ModelRun& run) const {
    const double s = double(c_.seq) / run.cp, N = run.rows * s, C = c_.hidden, t = run.tp;
    const double n = run.sequence_parallel ? N / t : N, D = c_.head_size();
    const double k = c_.top_k, E = c_.experts, R = N * k;
    const double mlp =
        c_.moe() ? N * E + 4 * N * k + run.rows * (E + 1) + 2 * R * C + 3 * R * c_.expert_ffn() / t
                 : 3 * N * c_.ffn() / t;
    const double probs = double(run.rows) * (c_.heads / t) * s * c_.seq;
    return 2 * n * C + 2 * n + 2 * N * C + N * (c_.heads + 2.0 * c_.kv_heads) / t * D +
           N * c_.heads / t * D + mlp + (run.recompute == Recompute::selective ? 0 : probs);
  }

  void validate(const ModelRun& run) const {
    c_.validate();
    validate_tensor_parallel(c_, run.tp, run.sequence_parallel);
    require(!c_.moe() || run.cp == 1,
            "a mixture of experts needs whole sequences on each rank (its load-balancing loss is "
            "per sequence): --cp " +
                std::to_string(run.cp) + " with --experts is not supported");
    // the widest activation of a microbatch: logits (V), gate/up (2F), attention scores (H seq)
    // or the experts' routed rows (k C, k 2 F_e)
    const long long routed = 1LL * c_.top_k * std::max(c_.hidden, 2 * c_.expert_ffn());
    check_activation_size(run, std::max({1LL * c_.vocab, 2LL * c_.ffn(), 1LL * c_.heads * c_.seq,
                                         c_.moe() ? routed : 0LL}));
  }
  ModelDescription describe() const {
    ModelDescription d{{"vocab", c_.vocab},   {"seq", c_.seq},     {"layers", c_.layers},
                       {"hidden", c_.hidden}, {"heads", c_.heads}, {"kv_heads", c_.kv_heads},
                       {"ffn", c_.ffn()}};
    if (!c_.moe()) return d;  // a dense model's description is as before experts existed
    d["experts"] = c_.experts;
    d["top_k"] = c_.top_k;
    d["moe_every"] = c_.moe_every;
    d["expert_ffn"] = c_.expert_ffn();
    return d;
  }
};

}  // namespace trident::llama
