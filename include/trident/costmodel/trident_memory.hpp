// trident/costmodel/trident_memory.hpp: what each rank of a trident run holds — its ZeRO units, its
// model states and its peak activations — from the run's options alone, before anything is
// allocated.
//
// The planner (plan/memory.hpp) follows the papers; trident differs in ways the cost model must
// know to predict MemoryStats to the byte:
//  - Psi per pipeline stage, not the largest stage's: the first stage holds wte and wpe, the
//    last ln_f and (PP > 1) its own copy of wte for the tied LM head (model/decoder_stage.hpp);
//  - each ZeRO unit (wte, wpe, h.i, ln_f) is one flat buffer padded to a multiple of the
//    DP x CP group (zero/unit_store.hpp; CP ranks hold the same parameters, as in Megatron), so
//    Psi is the sum of the padded units;
//  - element sizes are trident's (plan/formulas.hpp's trident_precision);
//  - activations are trident's own buffers in T (models/gpt2/block.hpp, model/decoder_stage.hpp),
//    added at each forward and freed at each backward of this stage's schedule (pp/schedule.hpp);
//    under CP a rank holds seq / cp tokens of each sequence, and its attention probabilities
//    cover those queries against all seq keys (cp/ring_attention.hpp).
// Unit sizes come from Megatron's split (plan/model_spec.hpp), not from models/gpt2/params.hpp, so
// that the test comparing the two has two independent sides.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "../models/gpt2/trainer.hpp"
#include "../plan/formulas.hpp"
#include "../plan/model_spec.hpp"

namespace trident::costmodel {

// the paper planner's formulas, shapes and presets, which this model builds on
using namespace plan;

// The planner's Config of run o (plan/config.hpp): its mesh, microbatching and memory policies.
inline Config plan_config(const gpt2::Options& o) {
  Config c;
  c.tp = o.mesh.tp;
  c.pp = o.mesh.pp;
  c.dp = o.mesh.dp;
  c.cp = o.mesh.cp;
  c.zero = o.zero.stage;
  c.microbatch_size = o.rows_per_microbatch();
  c.microbatches = o.microbatches;
  c.virtual_stages = o.virtual_stages;
  c.sequence_parallel = o.sequence_parallel;
  c.recompute = o.recompute;
  c.schedule = o.schedule;
  return c;
}

// The group ZeRO partitions over and gradients are summed over: DP x CP (mesh/mesh.hpp, dp_cp).
inline int zero_group(const gpt2::Options& o) {
  return o.mesh.dp * o.mesh.cp;
}

struct UnitSize {
  std::string name;
  double numel = 0, padded = 0;  // elements on one TP rank; padded to a multiple of DP x CP
  int tied_rank = -1;  // a layer split between two stages: the pipeline rank of the other copy
};

// One virtual stage's model chunk: its layers, whether it embeds / has the head, its units in
// the store's order.
struct ChunkUnits {
  int layers = 0;              // layers it holds, whole or half (model/model.hpp, StageSpec)
  int attention = 0, mlp = 0;  // the attention and MLP halves it runs (nn/block_halves.hpp)
  std::vector<nn::BlockHalves> halves;  // of each layer
  bool embedding = false, head = false;
  std::vector<UnitSize> units;
};

// The chunks pipeline rank `stage` runs (one per virtual stage, placed by o.chunk_map()).
inline std::vector<ChunkUnits> stage_chunks(const gpt2::Options& o, int stage) {
  const ModelSpec m = model_spec(o.model);
  const std::vector<int> split = layer_split(o);
  const int p = o.mesh.pp, t = o.mesh.tp;
  const double dp = zero_group(o);
  auto unit = [&](std::string name, double numel) {
    return UnitSize{std::move(name), numel, std::ceil(numel / dp) * dp};
  };
  std::vector<ChunkUnits> chunks;
  for (int c = 0; c < o.virtual_stages; ++c) {
    const int g = o.chunk_map().virtual_stage(c, stage);
    // a layer split between two stages holds its unit on both, tied to the other's
    const StageSpec spec = stage_spec(split, g);
    ChunkUnits k;
    k.layers = spec.layers;
    k.embedding = g == 0;
    k.head = g == p * o.virtual_stages - 1;
    k.attention = spec.layers - spec.from_second_half;
    k.mlp = spec.layers - spec.to_first_half;
    for (int l = 0; l < k.layers; ++l) k.halves.push_back(spec.halves(l));
    const double wte = double(embedding_shard_parameters(m, t));
    if (k.embedding) k.units = {unit("wte", wte), unit("wpe", double(m.seq) * m.hidden)};
    for (int l = 0; l < k.layers; ++l) {
      k.units.push_back(unit("h", double(layer_shard_parameters(m, t))));
      if (l == 0 && spec.from_second_half) k.units.back().tied_rank = o.chunk_map().rank(g - 1);
      if (l == k.layers - 1 && spec.to_first_half)
        k.units.back().tied_rank = o.chunk_map().rank(g + 1);
    }
    if (k.head) k.units.push_back(unit("ln_f", 2.0 * m.hidden));
    if (k.head && !k.embedding) k.units.push_back(unit("wte", wte));
    chunks.push_back(std::move(k));
  }
  return chunks;
}

// Psi of a rank of `stage`: its padded units.
inline double stage_parameters(const gpt2::Options& o, int stage) {
  double psi = 0;
  for (const ChunkUnits& c : stage_chunks(o, stage))
    for (const UnitSize& u : c.units) psi += u.padded;
  return psi;
}

// ZeRO §5 (plan/formulas.hpp's model_state_bytes) with trident's Psi and element sizes.
inline ModelStateBytes stage_model_states(const gpt2::Options& o, int stage, const Precision& p) {
  return model_state_bytes(stage_parameters(o, stage), o.zero, zero_group(o), p);
}

// --- activations (elements of T per microbatch) --------------------------------------------

// One rank's microbatch: N = B seq rows (n of them in the LayerNorm regions under SP), seq = this
// rank's tokens of a sequence (keys / cp), keys = the whole sequence.
struct ActivationShape {
  double N = 0, n = 0, C = 0, Cl = 0, heads = 0, seq = 0, keys = 0, B = 0, vocab_rows = 0;
};

inline ActivationShape activation_shape(const gpt2::Options& o) {
  const double t = o.mesh.tp, B = o.rows_per_microbatch(), keys = o.model.seq;
  const double seq = keys / o.mesh.cp, N = B * seq;
  const double vocab_rows = std::ceil(double(o.model.vocab) / t);  // padded vocab / t
  return {N,
          o.sequence_parallel ? N / t : N,
          double(o.model.hidden),
          o.model.hidden / t,
          o.model.heads / t,
          seq,
          keys,
          B,
          vocab_rows};
}

// The attention core's probabilities (B Hl seq keys): what selective recomputation drops after
// a layer's forward and recomputes in its backward (Korthikanti et al. 2022 §5).
inline double probability_elements(const ActivationShape& a) {
  return a.B * a.heads * a.seq * a.keys;
}
// models/gpt2/block.hpp's BlockActivations by half: attention x (n C), LN1's stats (2 n), ln1 (N
// C), qkv (3 N Cl), probs (B Hl seq keys; not kept under selective recomputation), att (N Cl);
// MLP x2 (n C: the stage's input when the MLP half runs alone), LN2's stats (2 n), ln2 (N C), fc
// and act (4 N Cl each).
inline double attention_activation_elements(const ActivationShape& a,
                                            Recompute r = Recompute::none) {
  return a.n * a.C + 2 * a.n + a.N * a.C + 3 * a.N * a.Cl +
         (r == Recompute::selective ? 0 : probability_elements(a)) + a.N * a.Cl;
}
inline double mlp_activation_elements(const ActivationShape& a) {
  return a.n * a.C + 2 * a.n + a.N * a.C + 8 * a.N * a.Cl;
}
inline double layer_activation_elements(const ActivationShape& a) {
  return attention_activation_elements(a) + mlp_activation_elements(a);
}

// The head's stash (model/decoder_stage.hpp): LN_f input (n C), its stats (2 n), the head's input
// (N C) and the softmax (N x this rank's vocabulary rows).
inline double head_activation_elements(const ActivationShape& a) {
  return a.n * a.C + 2 * a.n + a.N * a.C + a.N * a.vocab_rows;
}

// What one microbatch of a chunk keeps until its backward: every half's activations (but the
// probabilities under selective recomputation), or only each layer's input under full
// recomputation; the head's stash.
inline double chunk_stash_elements(const ChunkUnits& c, const ActivationShape& a, Recompute r) {
  const double layers = r == Recompute::full ? c.layers * a.n * a.C
                                             : c.attention * attention_activation_elements(a, r) +
                                                   c.mlp * mlp_activation_elements(a);
  return layers + (c.head ? head_activation_elements(a) : 0);
}

// Zero-bubble schedules (Qi et al. 2023) split the backward into B (input gradients) and W
// (weight gradients). B walks the layers from the last, each first writing its outputs'
// gradients that W reads (dout; QKV's and FC's dy, the gradient between the halves, under SP the
// projections' gathered dy: models/gpt2/block.hpp's BlockGradients), then dropping all of its
// stash but the linear layers' inputs (ln1, att; ln2, act). The head drops LN_f's statistics
// first; the first stage keeps the embedding's output gradient. W frees the rest.
struct LayerAtB {
  double gradients = 0, dropped = 0;
};
inline LayerAtB layer_at_b(nn::BlockHalves h, const ActivationShape& a, bool sp, Recompute r) {
  const bool att = nn::runs_attention(h), mlp = nn::runs_mlp(h);
  const double NC = a.N * a.C, NCl = a.N * a.Cl;
  const double stash =
      (att ? attention_activation_elements(a, r) : 0) + (mlp ? mlp_activation_elements(a) : 0);
  const double kept = (att ? NC + NCl : 0) + (mlp ? NC + 4 * NCl : 0);
  const double grads = a.n * a.C + (att ? 3 * NCl + (sp ? NC : 0) : 0) +
                       (mlp ? 4 * NCl + (sp ? NC : 0) : 0) + (att && mlp ? a.n * a.C : 0);
  return {grads, stash - kept};
}

// B of one microbatch of chunk c: the most it holds above its stash while B runs (rise), and
// what it keeps for W (kept).
struct InputHalf {
  double rise = 0, kept = 0;
};
inline InputHalf input_half(const ChunkUnits& c, const ActivationShape& a, bool sp, double stash,
                            Recompute r) {
  double run = c.head ? -2 * a.n : 0, rise = 0;
  for (auto l = c.halves.rbegin(); l != c.halves.rend(); ++l) {
    const LayerAtB x = layer_at_b(*l, a, sp, r);
    run += x.gradients;
    rise = std::max(rise, run);
    run -= x.dropped;
  }
  if (c.embedding) {
    run += a.n * a.C;
    rise = std::max(rise, run);
  }
  return {rise, stash + run};
}

// Peak activation bytes of a rank of `stage`: its schedule walked action by action, each
// forward adding its stash and each backward freeing it (zero-bubble: B most of it, W the rest).
// Under full recomputation one layer's activations come back for a while: during each layer's
// forward and its recomputation in the backward, on top of what is held; under selective
// recomputation a layer's probabilities, during its forward (in the backward they are buffers).
inline double stage_activation_bytes(const gpt2::Options& o, int stage, const Precision& p) {
  const ActivationShape a = activation_shape(o);
  const std::vector<ChunkUnits> chunks = stage_chunks(o, stage);
  const auto schedule =
      pp::make_schedule({o.schedule, o.mesh.pp, o.microbatches, o.virtual_stages})[stage];
  // under full recomputation, the largest layer or half of the chunk, but its input
  auto transient = [&](const ChunkUnits& c) {
    if (o.recompute != Recompute::full || c.layers == 0) return 0.0;
    const bool whole = c.attention + c.mlp > c.layers;  // a layer with both halves
    const double most = whole ? layer_activation_elements(a)
                              : std::max(c.attention ? attention_activation_elements(a) : 0.0,
                                         c.mlp ? mlp_activation_elements(a) : 0.0);
    return most - a.n * a.C;
  };
  const bool sp = o.sequence_parallel && o.mesh.tp > 1;
  double held = 0, peak = 0;
  for (const pp::Action& act : schedule) {
    if (act.op != pp::Op::forward && act.op != pp::Op::backward &&
        act.op != pp::Op::backward_input && act.op != pp::Op::backward_weight)
      continue;
    const ChunkUnits& c = chunks[act.chunk];
    const double stash = chunk_stash_elements(c, a, o.recompute);
    const double during = transient(c);
    const bool split = act.op == pp::Op::backward_input || act.op == pp::Op::backward_weight;
    const InputHalf b = split ? input_half(c, a, sp, stash, o.recompute) : InputHalf{};
    if (act.op == pp::Op::backward_input) {
      peak = std::max(peak, held + std::max(b.rise, during));
      held += b.kept - stash;
    } else if (act.op == pp::Op::backward_weight) {
      held -= b.kept;
    } else if (act.op == pp::Op::forward) {
      // layers' inputs and LN_f's input first, then one layer at a time, then the head
      const double before_head = c.layers * a.n * a.C + (c.head ? a.n * a.C : 0);
      peak = std::max(peak, held + before_head + during);
      // selective: the last layer (an attention half) kept its probabilities until its end
      if (o.recompute == Recompute::selective && c.attention > 0)
        peak = std::max(peak, held + stash - (c.head ? head_activation_elements(a) : 0) +
                                  (c.head ? a.n * a.C : 0) + probability_elements(a));
      held += stash;
      peak = std::max(peak, held);
    } else {
      peak = std::max(peak, held + during);
      held -= stash;
    }
  }
  return peak * p.activation_bytes;
}

}  // namespace trident::costmodel
