// trident/models/gpt2/model.hpp: GPT-2 (Radford et al. 2019) as a model of model/model.hpp —
// a decoder stage (model/decoder_stage.hpp) with GPT-2's parts: the word embedding plus learned
// positions, pre-LayerNorm blocks of attention and a GELU MLP, the final LayerNorm and an LM
// head tied to the word embedding, declared as tie("wte", first stage, last stage).
#pragma once

#include <algorithm>

#include "../../model/decoder_stage.hpp"
#include "../../nn/flops.hpp"
#include "block.hpp"
#include "embedding.hpp"
#include "head.hpp"

namespace trident::gpt2 {

class Model {
 public:
  Model() = default;
  explicit Model(const Config& c) : c_(c) {}
  const Config& config() const { return c_; }

  // --- model/model.hpp ---------------------------------------------------------------------
  template <class T, class S = T>
  using Stage = DecoderStage<Model, T, S>;

  int layers() const { return c_.layers; }
  int seq() const { return c_.seq; }
  int vocab() const { return c_.vocab; }

  std::vector<UnitSpec> units(const StageSpec& s, int tp) const {
    return decoder_units(*this, s, tp).units;
  }
  double initial_value(const ParamSpec& p, std::uint64_t index) const {
    return gpt2::initial_value(c_, p, index);
  }
  // The LM head's weight is the word embedding (Press & Wolf 2017).
  std::vector<Tie> ties(int virtual_stages) const { return {tie("wte", 0, virtual_stages - 1)}; }
  pp::StageCosts stage_costs() const {
    return {nn::gpt_layer_forward_flops(c_.seq, c_.hidden, 1), 0.0,
            nn::lm_head_forward_flops(c_.seq, c_.hidden, c_.vocab, 1)};
  }

  void validate(const ModelRun& run) const {
    auto s = [](long long v) { return std::to_string(v); };
    c_.validate();
    validate_tensor_parallel(c_, run.tp, run.sequence_parallel);
    // the widest activation of a microbatch: logits (V), the MLP (4C) or attention scores (H seq)
    const long long rows = run.rows, seq = c_.seq,
                    wide = std::max({1LL * c_.vocab, 4LL * c_.hidden, 1LL * c_.heads * seq});
    require(rows * seq * wide <= Config::kMaxElements,
            "a microbatch's activations (" + s(rows) + " sequences x " + s(seq) + " tokens x " +
                s(wide) + ") have more than 2^31 - 1 elements");
  }
  ModelDescription describe() const {
    return {{"vocab", c_.vocab},
            {"seq", c_.seq},
            {"layers", c_.layers},
            {"hidden", c_.hidden},
            {"heads", c_.heads}};
  }

  // --- model/decoder_stage.hpp ---------------------------------------------------------------
  template <class T>
  using Embedding = gpt2::Embedding<T>;
  template <class T>
  using Block = gpt2::Block<T>;
  template <class T>
  using Head = gpt2::Head<T>;
  std::vector<UnitSpec> embedding_units(int tp) const { return Embedding<float>::units(c_, tp); }
  UnitSpec layer_unit(int layer) const { return block_unit(c_, layer); }
  std::vector<UnitSpec> head_units(int tp) const { return Head<float>::units(c_, tp); }

 private:
  Config c_;
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
