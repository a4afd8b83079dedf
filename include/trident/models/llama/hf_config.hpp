// trident/models/llama/hf_config.hpp: a Hugging Face Llama config.json (transformers'
// LlamaConfig) as a Config — the shape of a published checkpoint, whose weights then load with
// --init (models/llama/params.hpp's hf_tensors: Hugging Face's names and layout).
//
// Read: vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads (default: the heads), rms_norm_eps, rope_theta; refused, as trident's
// Llama has none of them: tied embeddings, an activation other than SiLU, biases, RoPE scaling,
// a head size other than hidden / heads. The sequence length stays the run's (--seq).
#pragma once

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "../../core/error.hpp"
#include "config.hpp"

namespace trident::llama {

inline void read_hf_config(const std::string& path, Config& c) {
  std::ifstream in(path);
  require(bool(in), path + ": cannot read the Hugging Face config");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    fail(path + ": not a JSON config (" + e.what() + ")");
  }
  auto refuse = [&](bool bad, const std::string& what) {
    require(!bad, path + ": " + what + ", which trident's Llama (models/llama/) does not have");
  };
  auto number = [&](const char* key) {
    require(j.contains(key) && j[key].is_number(), path + ": no number \"" + key + "\"");
    return j[key].get<double>();
  };
  auto integer = [&](const char* key) {
    const double v = number(key);
    require(v == double(int(v)), path + ": \"" + key + "\" is not an integer");
    return int(v);
  };
  refuse(j.value("model_type", std::string("llama")) != "llama",
         "model_type is \"" + j.value("model_type", std::string()) + "\"");
  refuse(j.value("hidden_act", std::string("silu")) != "silu", "the activation is not SiLU");
  refuse(j.value("tie_word_embeddings", false), "the LM head is tied to the embedding");
  refuse(j.value("attention_bias", false) || j.value("mlp_bias", false), "it has biases");
  refuse(j.contains("rope_scaling") && !j["rope_scaling"].is_null(), "it scales RoPE");
  c.vocab = integer("vocab_size");
  c.hidden = integer("hidden_size");
  c.ffn_size = integer("intermediate_size");
  c.layers = integer("num_hidden_layers");
  c.heads = integer("num_attention_heads");
  c.kv_heads = j.contains("num_key_value_heads") ? integer("num_key_value_heads") : c.heads;
  c.norm_eps = j.contains("rms_norm_eps") ? number("rms_norm_eps") : 1e-6;  // LlamaConfig's
  c.rope_theta = j.contains("rope_theta") ? number("rope_theta") : 10000;
  refuse(j.contains("head_dim") && c.heads > 0 && integer("head_dim") != c.hidden / c.heads,
         "head_dim is not hidden_size / num_attention_heads");
}

}  // namespace trident::llama
