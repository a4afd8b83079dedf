// trident/train/sample.hpp: text from the model — autoregressive sampling with a temperature
// and top-k (Fan et al. 2018, "Hierarchical Neural Story Generation"), forward only.
//
// Each new token re-runs the forward over the context window (the last `seq` tokens; no KV
// cache) with the forward-only schedule (train/evaluate.hpp): the context is row 0 of one
// microbatch (every row holds it; causal attention lets the positions after it change
// nothing), and the last stage's head gives the next-token logits after its last token,
// gathered over TP. Under context parallelism each CP rank runs its chunks of the context and
// the one holding the last token gives the logits. One rank (TP 0 of the last stage, DP 0, that
// CP rank) draws the token with a counter-based
// RNG — a function of (seed, token index) only — and broadcasts it, so every rank continues with
// the same token and every mesh writes the same text for the same seed (up to rounding of the
// logits: in double, a draw within ~1e-13 of a boundary between two tokens).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "../core/random.hpp"
#include "evaluate.hpp"

namespace trident {

struct SampleOptions {
  int tokens = 0;            // tokens to sample after the prompt
  double temperature = 1.0;  // the logits are divided by it: < 1 sharper, > 1 flatter
  int top_k = 1;             // draw among the k most likely tokens (the vocabulary: all)
  std::uint64_t seed = 1;
};

// Bad values: one Error naming the flag (the same on every rank).
inline void validate(const SampleOptions& s, int vocab) {
  require(s.tokens >= 0, "--sample must be at least 0 tokens, got " + std::to_string(s.tokens));
  char t[32];
  std::snprintf(t, sizeof t, "%g", s.temperature);
  require(std::isfinite(s.temperature) && s.temperature > 0,
          std::string("--temperature must be a finite number > 0, got ") + t);
  require(s.top_k >= 1 && s.top_k <= vocab, "--top-k must be between 1 and the vocabulary of " +
                                                std::to_string(vocab) + ", got " +
                                                std::to_string(s.top_k));
}

// A uniform draw in [0, 1), a function of (seed, index).
inline double uniform_draw(std::uint64_t seed, std::uint64_t index) {
  return double(mix64(seed ^ mix64(index + 1)) >> 11) * 0x1p-53;
}

// The token that u (uniform in [0, 1)) picks from softmax(logits / temperature) over the top_k
// largest logits (equal logits: the lower id first), by the inverse of the cumulative sum.
inline int choose_token(const std::vector<double>& logits, double temperature, int top_k,
                        double u) {
  std::vector<int> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  ids.resize(std::min<std::size_t>(top_k, ids.size()));
  std::vector<double> weights;
  for (int id : ids) weights.push_back(std::exp((logits[id] - logits[ids[0]]) / temperature));
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  double cumulative = 0;
  for (std::size_t k = 0; k < ids.size(); ++k)
    if ((cumulative += weights[k]) > u * total) return ids[k];
  return ids.back();
}

// `s.tokens` tokens sampled after `prompt` (ids < vocab, at least one). Collective; the same
// tokens on every rank.
template <class M, class T, class S, class B>
std::vector<std::int32_t> sample(Trainer<M, T, S, B>& t, const std::vector<std::int32_t>& prompt,
                                 const SampleOptions& s) {
  const M& model = t.model();
  const int seq = model.seq(), vocab = model.vocab(), rows = t.options().rows_per_microbatch();
  validate(s, vocab);
  require(!prompt.empty(), "the prompt must hold at least one token");
  for (std::int32_t id : prompt)
    require(id >= 0 && id < vocab, "the prompt has token " + std::to_string(id) +
                                       ", outside the vocabulary [0, " + std::to_string(vocab) +
                                       ")");
  const Mesh<>& mesh = t.mesh();
  const ContextParallel<B>& cp = t.tp().cp;
  std::vector<std::int32_t> text = prompt, out;
  std::vector<T> logits(vocab);
  for (int i = 0; i < s.tokens; ++i) {
    const int length = std::min<int>(seq, text.size());
    Microbatch context{rows, seq, std::vector<std::int32_t>(std::size_t(seq) * rows, 0),
                       std::vector<std::int32_t>(std::size_t(seq) * rows, 0)};
    for (int p = 0; p < length; ++p)  // [s, b] order: token p of row r at p * rows + r
      std::fill_n(context.inputs.begin() + std::size_t(p) * rows, rows,
                  text[text.size() - length + p]);
    // the last token's CP rank and its index there (others read a row they ignore)
    const auto [holder, at] = cp.locate(length - 1, cp.local_seq(seq));
    const int chooser = mesh.rank_of({0, t.options().chunk_map().last_rank(), 0, holder});
    const Microbatch mine = cp_slice(cp, context);
    run_forward_only(t, 1, [&](int, int c, const T* in, T* o) {
      t.chunk(c).forward_logits(mine, in, o, holder == cp.rank() ? at : 0, logits.data());
    });
    int token = 0;
    if (mesh.world().rank() == chooser)
      token = choose_token(std::vector<double>(logits.begin(), logits.end()), s.temperature,
                           s.top_k, uniform_draw(s.seed, i));
    mesh.world().broadcast(Span<int>(&token, 1), chooser);
    text.push_back(token);
    out.push_back(token);
  }
  return out;
}

}  // namespace trident
