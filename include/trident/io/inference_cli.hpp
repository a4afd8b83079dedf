// trident/io/inference_cli.hpp: the evaluation and sampling flags of a training program
// (train/evaluate.hpp, train/sample.hpp), for any model:
//   --eval-every K     the loss on the held-out tail (10% of the data) every K steps and at the end
//   --eval-batches B   global batches of the held-out tail per evaluation
//   --sample N         N tokens (bytes, for byte data) sampled at the end, after --prompt
//   --temperature, --top-k, --sample-seed
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../train/sample.hpp"
#include "cli.hpp"

namespace trident {

struct InferenceFlags {
  int eval_every = 0;    // 0: no evaluation, and the whole data is trained on
  int eval_batches = 4;  // global batches per evaluation
  double held_out = 0.1;
  SampleOptions sample;  // sample.tokens = 0: no sample
  std::string prompt = "\n";
  cli::Option* top_k = nullptr;  // not given: the whole vocabulary
};

inline void add_inference_options(cli::App& app, InferenceFlags& f) {
  app.add_option("--eval-every", f.eval_every,
                 "every K steps (and after the last), the loss on the held-out tail (10%) of the "
                 "data, which training then never samples (0: none)")
      ->capture_default_str();
  app.add_option("--eval-batches", f.eval_batches, "global batches per evaluation")
      ->capture_default_str();
  app.add_option("--sample", f.sample.tokens,
                 "at the end, print N tokens (bytes of text) sampled from the model")
      ->capture_default_str();
  app.add_option("--prompt", f.prompt, "the text the sample continues (its bytes are token ids)");
  app.add_option("--temperature", f.sample.temperature,
                 "sampling temperature (logits / temperature)")
      ->capture_default_str();
  f.top_k = app.add_option("--top-k", f.sample.top_k,
                           "sample among the k most likely tokens (default: all)");
  app.add_option("--sample-seed", f.sample.seed, "sampling seed")->capture_default_str();
}

// After parsing: the defaults that depend on the model, and the checks (the same Error on every
// rank).
inline void check_inference_options(InferenceFlags& f, int vocab) {
  if (f.top_k->count() == 0) f.sample.top_k = vocab;
  require(f.eval_every >= 0, "--eval-every must be at least 0 steps (0: no evaluation), got " +
                                 std::to_string(f.eval_every));
  require(f.eval_batches >= 1,
          "--eval-batches must be at least 1, got " + std::to_string(f.eval_batches));
  validate(f.sample, vocab);
  require(!f.prompt.empty(), "--prompt must hold at least one byte");
  for (unsigned char c : f.prompt)
    require(c < vocab, "--prompt has the byte " + std::to_string(c) +
                           ", at or above the vocabulary of " + std::to_string(vocab));
}

inline std::vector<std::int32_t> prompt_tokens(const InferenceFlags& f) {
  return std::vector<std::int32_t>(f.prompt.begin(), f.prompt.end());
}

// Tokens as text: bytes for a byte vocabulary (<= 256), else the ids separated by spaces.
inline std::string tokens_as_text(const std::vector<std::int32_t>& tokens, int vocab) {
  std::string s;
  for (std::int32_t t : tokens)
    s += vocab <= 256 ? std::string(1, char(t)) : (s.empty() ? "" : " ") + std::to_string(t);
  return s;
}

}  // namespace trident
