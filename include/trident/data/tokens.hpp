// trident/data/tokens.hpp: the token stream and the global batch of a step.
//
// Sampling is a pure function of (seed, step, row of the global batch), so every mesh sees the
// same global batch whatever rank holds which rows (ARCHITECTURE §2.1). Tokens are the ids of a
// pre-tokenized token file (data/token_file.hpp, llm.c's layout), bytes (vocab 256) of any other
// file, ids given in memory, synthetic tokens for any vocab, or whatever a host app's own
// Sampler returns: the trainer asks only for (inputs, targets) of (seed, step, row).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/random.hpp"
#include "../cp/context_parallel.hpp"
#include "token_file.hpp"

namespace trident {

// A text corpus every Debian system has: the GNU GPL version 3 among its common licenses.
inline const char* default_corpus() {
  return "/usr/share/common-licenses/GPL-3";
}

class TokenSource {
 public:
  // A host app's deterministic source: writes row `row` of step `step`'s global batch, inputs
  // (seq) and targets (seq), ids in [0, vocab). It must be a pure function of its arguments
  // (the same on every rank and mesh); sample_rows checks the ids.
  using Sampler = std::function<void(std::uint64_t seed, int step, int row, int seq,
                                     std::int32_t* inputs, std::int32_t* targets)>;
  TokenSource(std::string name, int vocab, Sampler sampler)
      : sampler_(std::move(sampler)), vocab_(vocab), name_(std::move(name)) {
    require(vocab_ >= 1 && static_cast<bool>(sampler_),
            "the data source '" + name_ + "' needs a sampler and a vocab of at least 1");
  }

  // The tokens of a file: the ids of a token file (its header's magic, data/token_file.hpp),
  // else the file's bytes. Throws Error naming the file when it cannot be read (a directory,
  // say), has a bad token file header, or is shorter than one sequence plus one.
  static TokenSource from_file(const std::string& path, int seq) {
    std::error_code ec;
    require(!std::filesystem::is_directory(path, ec),
            "the data file '" + path + "' is a directory, not a file");
    std::ifstream in(path, std::ios::binary);
    require(static_cast<bool>(in), "cannot read the data file '" + path + "'");
    std::vector<unsigned char> bytes;
    try {  // a read error (EIO, ...) throws from inside the stream buffer
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } catch (const std::exception&) {
      fail("cannot read the data file '" + path + "'");
    }
    if (is_token_file(bytes)) return from_tokens(parse_token_file(path, bytes, seq), path);
    require(bytes.size() > static_cast<std::size_t>(seq) + 1,
            "the data file '" + path + "' has " + std::to_string(bytes.size()) +
                " bytes, fewer than one sequence of " + std::to_string(seq) + " + 1");
    TokenSource s;
    s.tokens_.assign(bytes.begin(), bytes.end());
    s.vocab_ = 256;
    s.name_ = path;
    return s;
  }
  // Token ids given in memory (each >= 0); vocab() is the largest id + 1.
  static TokenSource from_tokens(std::vector<std::int32_t> tokens, std::string name) {
    require(tokens.size() >= 2, "the data '" + name + "' needs at least 2 tokens");
    const auto [low, high] = std::minmax_element(tokens.begin(), tokens.end());
    require(*low >= 0, "the data '" + name + "' has a negative token id " + std::to_string(*low));
    TokenSource s;
    s.vocab_ = *high + 1;
    s.tokens_ = std::move(tokens);
    s.name_ = std::move(name);
    return s;
  }
  // Synthetic tokens: uniform over the vocab, a function of (seed, step, row, position).
  static TokenSource synthetic(int vocab) {
    TokenSource s;
    s.vocab_ = vocab;
    s.name_ = "synthetic";
    return s;
  }

  int vocab() const { return vocab_; }  // tokens are < vocab()
  const std::string& name() const { return name_; }
  bool is_synthetic() const { return tokens_.empty() && !sampler_; }

  // The held-out tail for evaluation (train/evaluate.hpp): {the part to train on, the part to
  // evaluate on}. Tokens: the last `fraction` of them are held out and the training part is
  // what comes before (each must hold a sequence of seq + 1). Synthetic: the training part is
  // this source unchanged and the held-out part the same distribution under another key. A host
  // app's Sampler cannot be split: it passes its own held-out source to evaluate().
  std::pair<TokenSource, TokenSource> split_tail(double fraction, int seq) const {
    require(!sampler_, "the data source '" + name_ +
                           "' is a host app's sampler: it has no tail to hold out (give "
                           "evaluate() a held-out source of its own)");
    if (is_synthetic()) {
      TokenSource held_out = *this;
      held_out.name_ = name_ + " (held-out)";
      held_out.salt_ = 0x9E3779B97F4A7C15ull;  // any other key: other tokens
      return {*this, held_out};
    }
    const std::size_t n = tokens_.size(), tail = std::size_t(double(n) * fraction);
    const auto fits = [&](std::size_t k) { return k > std::size_t(seq) + 1; };
    require(fits(tail) && fits(n - tail),
            "the data '" + name_ + "' has " + std::to_string(n) + " tokens: too few to hold out " +
                std::to_string(tail) + " and still have a sequence of " + std::to_string(seq) +
                " + 1 in each part");
    auto part = [&](std::size_t begin, std::size_t end, std::string name) {
      TokenSource s;
      s.vocab_ = vocab_;  // the vocabulary of the whole data
      s.name_ = std::move(name);
      s.tokens_.assign(tokens_.begin() + begin, tokens_.begin() + end);
      return s;
    };
    return {part(0, n - tail, name_), part(n - tail, n, name_ + " (held-out tail)")};
  }

  // Row `row` of step `step`: inputs (seq) and targets (seq, the inputs shifted by one).
  void sample(std::uint64_t seed, int step, int row, int seq, std::int32_t* inputs,
              std::int32_t* targets) const {
    if (sampler_) return sampler_(seed, step, row, seq, inputs, targets);
    const std::uint64_t key =
        mix64(seed ^ salt_ ^ mix64((std::uint64_t(step) << 32) | unsigned(row)));
    if (is_synthetic()) {
      for (int t = 0; t <= seq; ++t) {
        const auto tok = static_cast<std::int32_t>(mix64(key + t) % std::uint64_t(vocab_));
        if (t < seq) inputs[t] = tok;
        if (t > 0) targets[t - 1] = tok;
      }
      return;
    }
    require(tokens_.size() > std::size_t(seq) + 1,
            "the data '" + name_ + "' has " + std::to_string(tokens_.size()) +
                " tokens, fewer than one sequence of " + std::to_string(seq) + " + 1");
    const std::size_t start = mix64(key) % (tokens_.size() - seq - 1);
    for (int t = 0; t < seq; ++t) {
      inputs[t] = tokens_[start + t];
      targets[t] = tokens_[start + t + 1];
    }
  }

 private:
  TokenSource() = default;
  Sampler sampler_;
  std::vector<std::int32_t> tokens_;
  int vocab_ = 256;
  std::string name_;
  std::uint64_t salt_ = 0;  // mixed into the sampling key (a synthetic held-out part)
};

// Rows [row_begin, row_begin + rows) of a step's global batch in [s, b] order: element
// t * rows + b is token t of row row_begin + b (Megatron's layout of activations).
struct Microbatch {
  int rows = 0, seq = 0;
  std::vector<std::int32_t> inputs, targets;  // (seq * rows), [s, b] order
};

inline Microbatch sample_rows(const TokenSource& data, std::uint64_t seed, int step, int row_begin,
                              int rows, int seq) {
  Microbatch mb{rows, seq, std::vector<std::int32_t>(std::size_t(seq) * rows),
                std::vector<std::int32_t>(std::size_t(seq) * rows)};
  std::vector<std::int32_t> in(seq), tg(seq);
  for (int b = 0; b < rows; ++b) {
    data.sample(seed, step, row_begin + b, seq, in.data(), tg.data());
    for (int t = 0; t < seq; ++t)
      require(in[t] >= 0 && in[t] < data.vocab() && tg[t] >= 0 && tg[t] < data.vocab(),
              "the data '" + data.name() + "' gave token " +
                  std::to_string(in[t] < 0 || in[t] >= data.vocab() ? in[t] : tg[t]) + " at step " +
                  std::to_string(step) + ", row " + std::to_string(row_begin + b) +
                  ", outside its vocab [0, " + std::to_string(data.vocab()) + ")");
    for (int t = 0; t < seq; ++t) {
      mb.inputs[std::size_t(t) * rows + b] = in[t];
      mb.targets[std::size_t(t) * rows + b] = tg[t];
    }
  }
  return mb;
}

// A context-parallel rank's tokens of a microbatch (cp/context_parallel.hpp): the rows of its
// positions, [s, b] order kept. The microbatch itself when CP = 1.
template <class B>
Microbatch cp_slice(const ContextParallel<B>& cp, const Microbatch& mb) {
  if (cp.size() == 1) return mb;
  const int local = cp.local_seq(mb.seq), b = mb.rows;
  const nn::TokenPositions at = cp.positions(local);
  Microbatch out{b, local, std::vector<std::int32_t>(std::size_t(local) * b),
                 std::vector<std::int32_t>(std::size_t(local) * b)};
  for (int s = 0; s < local; ++s)
    for (int r = 0; r < b; ++r) {
      const std::size_t from = std::size_t(at(s)) * b + r, to = std::size_t(s) * b + r;
      out.inputs[to] = mb.inputs[from];
      out.targets[to] = mb.targets[from];
    }
  return out;
}

// The m microbatches of `rows` rows each that DP replica `replica` takes of step `step`'s global
// batch (its rows replica * m * rows on), each cut to this CP rank's tokens: the same sequences
// on every mesh (ARCHITECTURE §2.1).
template <class B>
std::vector<Microbatch> replica_microbatches(const TokenSource& data, std::uint64_t seed, int step,
                                             int replica, int m, int rows, int seq,
                                             const ContextParallel<B>& cp) {
  std::vector<Microbatch> out;
  for (int mb = 0; mb < m; ++mb)
    out.push_back(
        cp_slice(cp, sample_rows(data, seed, step, (replica * m + mb) * rows, rows, seq)));
  return out;
}

}  // namespace trident
