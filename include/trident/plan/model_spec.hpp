// trident/plan/model_spec.hpp: the shape of a GPT decoder and how many parameters it has.
//
// A GPT-2-style decoder: L layers of hidden size h with a attention heads, an MLP of width 4h,
// learned position embeddings for s positions, a vocabulary of V tokens and an LM head tied to
// the word embedding. Presets are the models the papers talk about. The parameter count comes
// two ways, Narayanan et al. 2021's closed form and an exact count from the layer shapes, and
// the planner also needs the largest model-parallel shard: the Psi that ZeRO partitions over
// data parallelism.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "../core/error.hpp"

namespace trident::plan {

struct ModelSpec {
  std::string name;
  int layers = 0;  // L
  int hidden = 0;  // h
  int heads = 0;   // a
  int vocab = 0;   // V
  int seq = 0;     // s
};

inline void validate(const ModelSpec& m) {
  if (m.layers < 1 || m.hidden < 1 || m.heads < 1 || m.vocab < 1 || m.seq < 1)
    fail("model '" + m.name + "': layers, hidden, heads, vocab and seq must all be at least 1");
  if (m.hidden % m.heads != 0)
    fail("model '" + m.name + "': " + std::to_string(m.heads) +
         " attention heads do not divide the hidden size " + std::to_string(m.hidden));
}

// The named models. GPT-2: Radford et al. 2019 (vocabulary 50257, context 1024). GPT-3: Brown
// et al. 2020, Table 2.1, with heads = d_model / d_head (d_head = 128) and 13B's d_model rounded
// to 40 x 128 = 5120 as Megatron-LM does. The GPT-3 presets and gpt-1t take Narayanan et al.
// 2021's vocabulary padded to 51200 and sequence 2048; gpt3-175b is the 175B model of its
// Table 2 (the comparison with ZeRO-3), gpt-1t the 1008B row of its Table 1.
inline ModelSpec preset(const std::string& name) {
  static const ModelSpec presets[] = {
      {"gpt2", 12, 768, 12, 50257, 1024},        {"gpt2-xl", 48, 1600, 25, 50257, 1024},
      {"gpt3-1.3b", 24, 2048, 16, 51200, 2048},  {"gpt3-13b", 40, 5120, 40, 51200, 2048},
      {"gpt3-175b", 96, 12288, 96, 51200, 2048}, {"gpt-1t", 128, 25600, 160, 51200, 2048},
  };
  std::string known;
  for (const ModelSpec& m : presets) {
    if (m.name == name) return m;
    known += (known.empty() ? "" : ", ") + m.name;
  }
  fail("unknown model preset '" + name + "' (known: " + known + ")");
}

// Narayanan et al. 2021, §5.1 (the equation for P):
//   P = 12 L h^2 (1 + 13/(12h) + (V+s)/(12 L h))
// It counts the layers and both embeddings; it leaves out the final LayerNorm (2h).
inline double parameters_formula(const ModelSpec& m) {
  const double L = m.layers, h = m.hidden, V = m.vocab, s = m.seq;
  return 12 * L * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * L * h));
}

// One transformer layer: QKV 3h^2 + 3h, attention projection h^2 + h, FC1 4h^2 + 4h,
// FC2 4h^2 + h, two LayerNorms 4h: 12h^2 + 13h.
inline std::int64_t layer_parameters(const ModelSpec& m) {
  const std::int64_t h = m.hidden;
  return 12 * h * h + 13 * h;
}

// Exact count from the layer shapes: word embedding V h (tied to the LM head, counted once),
// positions s h, L layers, the final LayerNorm 2h.
inline std::int64_t parameter_count(const ModelSpec& m) {
  const std::int64_t h = m.hidden;
  return std::int64_t{m.vocab} * h + std::int64_t{m.seq} * h + m.layers * layer_parameters(m) +
         2 * h;
}

// One tensor-parallel rank's share of a layer (Megatron-LM, Shoeybi et al. 2019, §3): QKV and
// FC1 are split by columns (weights and biases), the attention projection and FC2 by rows
// (weights only; their biases and both LayerNorms are replicated):
//   12h^2/t + 7h/t + 6h
inline std::int64_t layer_shard_parameters(const ModelSpec& m, int tp) {
  const std::int64_t h = m.hidden;
  return (12 * h * h + 7 * h) / tp + 6 * h;
}

// One tensor-parallel rank's rows of the vocabulary-parallel word embedding (Megatron-LM §3):
// ceil(V/t) h (Megatron pads V to a multiple of t).
inline std::int64_t embedding_shard_parameters(const ModelSpec& m, int tp) {
  return (std::int64_t{m.vocab} + tp - 1) / tp * m.hidden;
}

// Psi of one model-parallel shard: the parameters one (tp, pp) rank holds, taking the larger
// of the first pipeline stage (L/p layers, its embedding rows, the positions) and the last
// (L/p layers, the tied copy of the embedding rows, the final LayerNorm). With p = 1 one stage
// holds all of it.
inline std::int64_t shard_parameters(const ModelSpec& m, int tp, int pp) {
  const std::int64_t layers = m.layers / pp * layer_shard_parameters(m, tp);
  const std::int64_t embedding = embedding_shard_parameters(m, tp);
  const std::int64_t positions = std::int64_t{m.seq} * m.hidden, final_norm = 2 * m.hidden;
  if (pp == 1) return layers + embedding + positions + final_norm;
  return layers + embedding + std::max(positions, final_norm);
}

}  // namespace trident::plan
