// tests/small_model.hpp: the small GPT-2 and Llama of the parity tests and their optimizer. A vocab
// of 67 is divisible by no TP size, so the padding of the vocab-parallel layers is always
// exercised.
#pragma once

#include <trident/models/gpt2/config.hpp>
#include <trident/models/llama/config.hpp>
#include <trident/optim/adamw.hpp>

namespace trident::test {

inline gpt2::Config small_model(int layers = 4) {
  gpt2::Config c;
  c.vocab = 67;
  c.seq = 16;
  c.layers = layers;
  c.hidden = 32;
  c.heads = 8;
  c.seed = 7;
  return c;
}

// The small Llama of the tests: the same sizes, grouped-query attention (4 heads, 2 of keys and
// values).
inline llama::Config small_llama(int layers = 4) {
  llama::Config c;
  c.vocab = 67;
  c.seq = 16;
  c.layers = layers;
  c.hidden = 32;
  c.heads = 4;
  c.kv_heads = 2;
  c.seed = 7;
  return c;
}

// The small Llama with experts (models/llama/moe_mlp.hpp): four of width 48 in layers 0, every,
// 2 every, ... of 4, each token routed to its top_k, and a load-balancing coefficient large
// enough that its gradient moves the router measurably.
inline llama::Config small_llama_moe(int top_k = 2, int every = 2) {
  llama::Config c = small_llama();
  c.experts = 4;
  c.top_k = top_k;
  c.moe_every = every;
  c.expert_ffn_size = 48;
  c.aux_loss_coef = 0.1;
  return c;
}

// Warm-up of one step, so that the learning rate moves from the first step.
inline AdamW small_optimizer() {
  AdamW a;
  a.lr = 1e-2;
  a.warmup = 1;
  a.steps = 3;
  a.clip = 1.0;
  return a;
}

}  // namespace trident::test
