// trident/model/params.hpp: the decoder's parameters, by Hugging Face GPT-2 name, grouped into
// units and laid out on one tensor-parallel rank.
//
// Names and layouts are GPT-2's state dict (weights stored [in, out], as its Conv1D), so
// weights move to and from PyTorch without renaming. Placements over TP are Megatron's
// (Shoeybi et al. 2019, §3): QKV and FC column-parallel (output features sharded; QKV as three
// sections so each rank holds its heads), the two projections row-parallel (input features
// sharded), the word embedding vocab-parallel (rows, padded to a multiple of TP), the rest
// replicated.
//
// A unit is the granule of ZeRO (zero/): a group of parameters stored in one flat buffer,
// partitioned over DP, gathered and reduced together. Units: "wte", "wpe", "h.{i}", "ln_f".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../tensor/sharded_tensor.hpp"
#include "config.hpp"
#include "init.hpp"

namespace trident {

struct ParamSpec {
  std::string name;                 // Hugging Face GPT-2 name, e.g. "h.3.attn.c_attn.weight"
  std::vector<std::int64_t> shape;  // global shape
  Placement tp;                     // placement over the tensor-parallel axis
  std::int64_t padded = 0;          // padded extent of the sharded dimension (vocab), 0 = none
  Init init = Init::normal;
  bool decay = true;  // AdamW weight decay: weights yes, biases and LayerNorm no
};

struct UnitSpec {
  std::string name;
  std::vector<ParamSpec> params;
};

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

inline std::int64_t padded_vocab(const GPTConfig& c, int tp) {
  return (c.vocab + tp - 1) / tp * tp;  // Megatron's make-vocab-size-divisible-by TP
}

inline UnitSpec wte_unit(const GPTConfig& c, int tp) {
  return {"wte", {{"wte.weight", {c.vocab, c.hidden}, Placement::Shard(0), padded_vocab(c, tp)}}};
}
inline UnitSpec wpe_unit(const GPTConfig& c) {
  return {"wpe", {{"wpe.weight", {c.seq, c.hidden}, Placement::Replicate()}}};
}
inline UnitSpec ln_f_unit(const GPTConfig& c) {
  const std::int64_t C = c.hidden;
  return {"ln_f",
          {{"ln_f.weight", {C}, Placement::Replicate(), 0, Init::ones, false},
           {"ln_f.bias", {C}, Placement::Replicate(), 0, Init::zeros, false}}};
}
inline UnitSpec block_unit(const GPTConfig& c, int layer) {
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
inline std::vector<UnitSpec> all_units(const GPTConfig& c) {
  std::vector<UnitSpec> units{wte_unit(c, 1), wpe_unit(c)};
  for (int l = 0; l < c.layers; ++l) units.push_back(block_unit(c, l));
  units.push_back(ln_f_unit(c));
  return units;
}

// --- one unit on one TP rank ---------------------------------------------------------------

struct LocalParam {
  ParamSpec spec;
  ShardLayout layout;      // this rank's block of the global tensor
  std::size_t offset = 0;  // in the unit's flat buffer
  std::size_t numel = 0;   // local elements, padding included
  bool tp_replicated() const { return !spec.tp.is_shard(); }
};

struct UnitLayout {
  std::string name;
  std::vector<LocalParam> params;
  std::size_t numel = 0;  // sum of the local params

  const LocalParam& find(const std::string& param) const {
    for (const LocalParam& p : params)
      if (p.spec.name == param) return p;
    fail("unit " + name + " has no parameter " + param);
  }
};

inline UnitLayout layout_unit(const UnitSpec& unit, int tp_size, int tp_rank) {
  UnitLayout u{unit.name, {}, 0};
  for (const ParamSpec& s : unit.params) {
    ShardLayout l(s.shape, s.tp, tp_size, tp_rank, s.padded);
    const auto n = static_cast<std::size_t>(l.local_numel());
    u.params.push_back({s, l, u.numel, n});
    u.numel += n;
  }
  return u;
}

// Writes the initial values of this rank's block of every parameter into `out` (unit numel).
template <class T>
void initialise_unit(const UnitLayout& u, const GPTConfig& c, T* out) {
  for (const LocalParam& p : u.params)
    fill_local(p.layout, out + p.offset, [&](std::int64_t g) {
      return initial_value(p.spec.init, c.seed, p.spec.name, static_cast<std::uint64_t>(g),
                           c.layers);
    });
}

}  // namespace trident
