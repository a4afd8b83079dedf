// trident/models/gpt2/params.hpp: GPT-2's parameters, by Hugging Face GPT-2 name, grouped into
// units (zero/params.hpp).
//
// Names and layouts are GPT-2's state dict (weights stored [in, out], as its Conv1D), so
// weights move to and from PyTorch without renaming. Placements over TP are Megatron's
// (Shoeybi et al. 2019, §3): QKV and FC column-parallel (output features sharded; QKV as three
// sections so each rank holds its heads), the two projections row-parallel (input features
// sharded), the word embedding vocab-parallel (rows, padded to a multiple of TP), the rest
// replicated.
//
// Units: "wte", "wpe", "h.{i}", "ln_f"; the LM head is "wte" again (tied: models/gpt2/model.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../../zero/params.hpp"
#include "config.hpp"

namespace trident::gpt2 {

// Order of a block's parameters inside its unit (the index into UnitSpec::params).
enum BlockParam {
  kLn1W,
  kLn1B,
  kQkvW,
  kQkvB,
  kAttnProjW,
  kAttnProjB,
  kLn2W,
  kLn2B,
  kFcW,
  kFcB,
  kMlpProjW,
  kMlpProjB,
  kBlockParams
};

inline std::int64_t padded_vocab(const Config& c, int tp) {
  return (c.vocab + tp - 1) / tp * tp;  // Megatron's make-vocab-size-divisible-by TP
}

inline UnitSpec wte_unit(const Config& c, int tp) {
  return {"wte", {{"wte.weight", {c.vocab, c.hidden}, Placement::Shard(0), padded_vocab(c, tp)}}};
}
inline UnitSpec wpe_unit(const Config& c) {
  return {"wpe", {{"wpe.weight", {c.seq, c.hidden}, Placement::Replicate()}}};
}
inline UnitSpec ln_f_unit(const Config& c) {
  const std::int64_t C = c.hidden;
  return {"ln_f",
          {{"ln_f.weight", {C}, Placement::Replicate(), 0, Init::ones, false},
           {"ln_f.bias", {C}, Placement::Replicate(), 0, Init::zeros, false}}};
}
inline UnitSpec block_unit(const Config& c, int layer) {
  const std::int64_t C = c.hidden;
  const std::string p = "h." + std::to_string(layer) + ".";
  const Placement rep = Placement::Replicate();
  auto bias = [&](std::string n, std::int64_t size, Placement pl) {
    return ParamSpec{p + n, {size}, pl, 0, Init::zeros, false};
  };
  return {"h." + std::to_string(layer),
          {{p + "ln_1.weight", {C}, rep, 0, Init::ones, false},
           bias("ln_1.bias", C, rep),
           {p + "attn.c_attn.weight", {C, 3 * C}, Placement::Shard(1, 3)},
           bias("attn.c_attn.bias", 3 * C, Placement::Shard(0, 3)),
           {p + "attn.c_proj.weight", {C, C}, Placement::Shard(0), 0, Init::residual_normal},
           bias("attn.c_proj.bias", C, rep),
           {p + "ln_2.weight", {C}, rep, 0, Init::ones, false},
           bias("ln_2.bias", C, rep),
           {p + "mlp.c_fc.weight", {C, 4 * C}, Placement::Shard(1)},
           bias("mlp.c_fc.bias", 4 * C, Placement::Shard(0)),
           {p + "mlp.c_proj.weight", {4 * C, C}, Placement::Shard(0), 0, Init::residual_normal},
           bias("mlp.c_proj.bias", C, rep)}};
}

// Every parameter of the model, in unit order (the single-process view).
inline std::vector<UnitSpec> all_units(const Config& c) {
  std::vector<UnitSpec> units{wte_unit(c, 1), wpe_unit(c)};
  for (int l = 0; l < c.layers; ++l) units.push_back(block_unit(c, l));
  units.push_back(ln_f_unit(c));
  return units;
}

// GPT-2's initialisation (Radford et al. 2019, §2.3; nn/init.hpp): weights normal(0, 0.02),
// the residual projections scaled by 1/sqrt(2 L), biases zero, LayerNorm gains one.
inline double initial_value(const Config& c, const ParamSpec& p, std::uint64_t index) {
  return trident::initial_value(p.init, c.seed, p.name, index, c.layers);
}

}  // namespace trident::gpt2
