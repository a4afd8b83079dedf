// trident/models/gpt2/model.hpp: GPT-2 (Radford et al. 2019) as a model of model/model.hpp —
// a decoder stage (model/decoder_stage.hpp) with GPT-2's parts: the word embedding plus learned
// positions, pre-LayerNorm blocks of attention and a GELU MLP, the final LayerNorm and an LM
// head tied to the word embedding, declared as tie("wte", first stage, last stage).
#pragma once

#include <algorithm>

#include "../../model/decoder_model.hpp"
#include "../../nn/flops.hpp"
#include "../../plan/formulas.hpp"
#include "block.hpp"
#include "embedding.hpp"
#include "head.hpp"

namespace trident::gpt2 {

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
    return gpt2::initial_value(c_, p, index);
  }
  // The LM head's weight is the word embedding (Press & Wolf 2017).
  std::vector<Tie> ties(int virtual_stages) const { return {tie("wte", 0, virtual_stages - 1)}; }
  pp::StageCosts stage_costs() const {
    return {nn::gpt_layer_forward_flops(c_.seq, c_.hidden, 1), 0.0,
            nn::lm_head_forward_flops(c_.seq, c_.hidden, c_.vocab, 1),
            nn::gpt_attention_half_forward_flops(c_.seq, c_.hidden, 1)};
  }

  // Elements of T one layer keeps per microbatch for its backward (models/gpt2/block.hpp's
  // BlockActivations; Korthikanti et al. 2022 §4 count the same tensors): x and x2 (n C each),
  // the LayerNorms' means and 1/std (4 n), ln1 and ln2 (N C each), qkv, att, fc and act
  // (12 N C/t), the attention probabilities (b H/t s s_cp: not kept under selective
  // recomputation, Korthikanti et al. 2022 §5); N = b s/cp rows, n = N/t under SP.
  double layer_activation_elements(const ModelRun& run) const {
    const double s = double(c_.seq) / run.cp, N = run.rows * s, C = c_.hidden;
    const double n = run.sequence_parallel ? N / run.tp : N, Cl = C / run.tp;
    const double probs = double(run.rows) * (c_.heads / run.tp) * s * c_.seq;
    return 2 * n * C + 4 * n + 2 * N * C + 12 * N * Cl +
           (run.recompute == Recompute::selective ? 0 : probs);
  }

  void validate(const ModelRun& run) const {
    c_.validate();
    validate_tensor_parallel(c_, run.tp, run.sequence_parallel);
    // the widest activation of a microbatch: logits (V), the MLP (4C) or attention scores (H seq)
    check_activation_size(run,
                          std::max({1LL * c_.vocab, 4LL * c_.hidden, 1LL * c_.heads * c_.seq}));
  }
  ModelDescription describe() const {
    return {{"vocab", c_.vocab},
            {"seq", c_.seq},
            {"layers", c_.layers},
            {"hidden", c_.hidden},
            {"heads", c_.heads}};
  }
};

// The shape a description holds (a checkpoint's "model"); the seed is not part of it.
inline Config config_of(const ModelDescription& d) {
  auto at = [&](const char* k) {
    const auto it = d.find(k);
    require(it != d.end(), std::string("the model description has no \"") + k + "\"");
    return static_cast<int>(it->second);
  };
  return {at("vocab"), at("seq"), at("layers"), at("hidden"), at("heads"), 0};
}

}  // namespace trident::gpt2
