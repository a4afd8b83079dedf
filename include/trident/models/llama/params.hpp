// trident/models/llama/params.hpp: the Llama-style decoder's parameters, grouped into units
// (zero/params.hpp).
//
// Names follow Hugging Face's Llama state dict without its "model." prefix; weights are held
// [in, out] (nn/linear.hpp), the transpose of PyTorch's nn.Linear, and gate and up as one
// weight; weight files are in Hugging Face's layout (hf_tensors, below). Placements over TP are
// Megatron's (Shoeybi et al. 2019, §3) with grouped-query attention: q, k and v column-parallel
// (each rank holds H / TP query heads and the KV / TP key/value heads they read), gate and up
// column-parallel as one weight of two sections, o and down row-parallel, the embedding and the
// untied LM head vocab-parallel (rows, padded to a multiple of TP), the RMSNorm gains replicated.
//
// Units: "embed_tokens", "layers.{i}", "norm", "lm_head".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../../io/file_layout.hpp"
#include "../../zero/params.hpp"
#include "config.hpp"

namespace trident::llama {

// Order of a block's parameters inside its unit (the index into UnitSpec::params).
enum BlockParam { kAttnNorm, kQ, kK, kV, kO, kMlpNorm, kGateUp, kDown, kBlockParams };
// An MoE layer's unit (Config::is_moe): the router and the experts in place of gate_up and down.
enum MoeParam { kRouter = kGateUp, kExpertsGateUp, kExpertsDown, kMoeBlockParams };

inline std::int64_t padded_vocab(const Config& c, int tp) {
  return (c.vocab + tp - 1) / tp * tp;  // Megatron's make-vocab-size-divisible-by TP
}

// A (vocab, C) table split by rows over TP: the embedding, and the LM head.
inline UnitSpec vocab_unit(const std::string& name, const Config& c, int tp) {
  return {name,
          {{name + ".weight", {c.vocab, c.hidden}, Placement::Shard(0), padded_vocab(c, tp)}}};
}
inline UnitSpec norm_unit(const Config& c) {
  return {"norm", {{"norm.weight", {c.hidden}, Placement::Replicate(), 0, Init::ones, false}}};
}
inline UnitSpec block_unit(const Config& c, int layer) {
  const std::int64_t C = c.hidden, D = c.head_size(), H = c.heads, KV = c.kv_heads, F = c.ffn();
  const std::string p = "layers." + std::to_string(layer) + ".";
  auto gain = [&](std::string n) {
    return ParamSpec{p + n, {C}, Placement::Replicate(), 0, Init::ones, false};
  };
  UnitSpec u{
      "layers." + std::to_string(layer),
      {gain("input_layernorm.weight"),
       {p + "self_attn.q_proj.weight", {C, H * D}, Placement::Shard(1)},
       {p + "self_attn.k_proj.weight", {C, KV * D}, Placement::Shard(1)},
       {p + "self_attn.v_proj.weight", {C, KV * D}, Placement::Shard(1)},
       {p + "self_attn.o_proj.weight", {H * D, C}, Placement::Shard(0), 0, Init::residual_normal},
       gain("post_attention_layernorm.weight")}};
  if (!c.is_moe(layer)) {
    u.params.push_back({p + "mlp.gate_up_proj.weight", {C, 2 * F}, Placement::Shard(1, 2)});
    u.params.push_back(
        {p + "mlp.down_proj.weight", {F, C}, Placement::Shard(0), 0, Init::residual_normal});
    return u;
  }
  // The router (C, E), replicated over TP; the E experts' weights stacked by rows, each expert
  // split over TP as the dense MLP (gate/up by columns, down by rows): gate_up (E C, 2 F_e) in
  // gate and up sections, down (E F_e, C) in E sections, so that a rank's slice of expert e is
  // one contiguous (C, 2 F_e/t) and one (F_e/t, C) block (nn/experts.hpp).
  const std::int64_t E = c.experts, Fe = c.expert_ffn();
  u.params.push_back({p + "mlp.router.weight", {C, E}, Placement::Replicate()});
  u.params.push_back(
      {p + "mlp.experts.gate_up_proj.weight", {E * C, 2 * Fe}, Placement::Shard(1, 2)});
  u.params.push_back({p + "mlp.experts.down_proj.weight",
                      {E * Fe, C},
                      Placement::Shard(0, static_cast<int>(E)),
                      0,
                      Init::residual_normal});
  return u;
}

// Parameter p in Hugging Face's LlamaForCausalLM files (io/file_layout.hpp): "model." before
// every name but lm_head's, the linear weights [out, in], gate_up as gate_proj and up_proj.
inline std::vector<FileTensor> hf_tensors(const ParamSpec& p) {
  if (p.name == "lm_head.weight") return {{p.name, false}};
  const std::string name = "model." + p.name;
  if (p.shape.size() == 1 || p.name == "embed_tokens.weight") return {{name, false}};
  if (name.find(".mlp.experts.") != std::string::npos ||
      name.find(".mlp.router.") != std::string::npos)
    return {{name, false}};  // trident's own layout (Mixtral's keeps one tensor per expert)
  const std::size_t gate_up = name.find("gate_up_proj");
  if (gate_up != std::string::npos) {
    const std::string before = name.substr(0, gate_up), after = name.substr(gate_up + 12);
    return {{before + "gate_proj" + after, true}, {before + "up_proj" + after, true}};
  }
  return {{name, true}};
}

// Weights normal(0, 0.02), the residual projections (o, down) scaled by 1/sqrt(2 L) as GPT-2's
// (Radford et al. 2019, §2.3), RMSNorm gains one (nn/init.hpp).
inline double initial_value(const Config& c, const ParamSpec& p, std::uint64_t index) {
  return trident::initial_value(p.init, c.seed, p.name, index, c.layers);
}

}  // namespace trident::llama
