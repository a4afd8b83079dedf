// Llama's weight files are Hugging Face's (models/llama/params.hpp, hf_tensors; io/weights.hpp):
// a checkpoint the test writes in LlamaForCausalLM's names and layout — "model." prefixes,
// linear weights [out, in], gate_proj and up_proj apart — loads on another mesh to the same
// parameters, and a saved file has exactly those tensors, shapes and values; a config.json
// gives the shape (models/llama/hf_config.hpp), and what trident's Llama lacks is refused.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <trident/io/weights.hpp>
#include <trident/models/llama/hf_config.hpp>
#include <trident/models/llama/llama.hpp>

#include "mpi_test.hpp"
#include "small_model.hpp"

using namespace trident;

namespace {

std::string hf_path(const Comm& comm, const std::string& name) {
  std::int64_t id = getpid();
  comm.broadcast(Span<std::int64_t>(&id, 1), 0);
  return (std::filesystem::temp_directory_path() / ("trident_hf_" + std::to_string(id) + name))
      .string();
}

llama::Config hf_model() {  // an MLP width of its own (48, not the rule's 96), as a published one
  llama::Config c = test::small_llama(2);
  c.ffn_size = 48;
  c.seed = 11;
  return c;
}

// Hugging Face's tensors of trident's parameters, converted here, apart from the library:
// name -> (shape, values).
using HfTensors = std::map<std::string, std::pair<std::vector<std::int64_t>, std::vector<double>>>;
HfTensors to_hugging_face(const NamedTensors<double>& p, const llama::Config& c) {
  HfTensors hf;
  // columns [from, from + n) of a row-major (rows, cols) matrix, transposed: (n, rows)
  auto transposed = [](const Matrix<double>& m, Eigen::Index from, Eigen::Index n) {
    Matrix<double> t = m.middleCols(from, n).transpose();
    return std::make_pair(std::vector<std::int64_t>{n, m.rows()},
                          std::vector<double>(t.data(), t.data() + t.size()));
  };
  auto as_is = [](const Matrix<double>& m, std::vector<std::int64_t> shape) {
    return std::make_pair(shape, std::vector<double>(m.data(), m.data() + m.size()));
  };
  hf["model.embed_tokens.weight"] = as_is(p.at("embed_tokens.weight"), {c.vocab, c.hidden});
  hf["lm_head.weight"] = as_is(p.at("lm_head.weight"), {c.vocab, c.hidden});
  hf["model.norm.weight"] = as_is(p.at("norm.weight"), {c.hidden});
  for (int l = 0; l < c.layers; ++l) {
    const std::string ours = "layers." + std::to_string(l) + ".", theirs = "model." + ours;
    for (const char* gain : {"input_layernorm.weight", "post_attention_layernorm.weight"})
      hf[theirs + gain] = as_is(p.at(ours + gain), {c.hidden});
    for (const char* proj : {"q_proj", "k_proj", "v_proj", "o_proj"}) {
      const Matrix<double>& w = p.at(ours + "self_attn." + proj + ".weight");
      hf[theirs + "self_attn." + proj + ".weight"] = transposed(w, 0, w.cols());
    }
    const Matrix<double>& gate_up = p.at(ours + "mlp.gate_up_proj.weight");  // (C, 2F)
    hf[theirs + "mlp.gate_proj.weight"] = transposed(gate_up, 0, c.ffn());
    hf[theirs + "mlp.up_proj.weight"] = transposed(gate_up, c.ffn(), c.ffn());
    const Matrix<double>& down = p.at(ours + "mlp.down_proj.weight");
    hf[theirs + "mlp.down_proj.weight"] = transposed(down, 0, down.cols());
  }
  return hf;
}

}  // namespace

TEST_CASE(
    "llama: a Hugging Face checkpoint loads on TP2 and on DP2 ZeRO-3; saved, it is the same") {
  TRIDENT_RANKS(2, comm);
  const llama::Config c = hf_model();
  const TokenSource data = TokenSource::synthetic(c.vocab);
  const std::string written = hf_path(comm, "in.safetensors"), saved = hf_path(comm, "out");
  TrainOptions o;
  o.batch = 4;
  o.optimizer.lr = 1e-2;
  o.mesh = {2, 1, 1};
  llama::Trainer<double> source(comm, llama::Model(c), o, data);
  (void)source.step();  // weights that are no initialisation's
  const NamedTensors<double> params = collect_parameters(source);
  const HfTensors hf = comm.rank() == 0 ? to_hugging_face(params, c) : HfTensors{};
  if (comm.rank() == 0) {
    io::SafetensorsWriter w;
    for (const auto& [name, tensor] : hf) w.add(name, tensor.second.data(), tensor.first);
    w.write(written);
    CHECK(hf.at("model.layers.1.self_attn.k_proj.weight").first ==  // [KV D, C]
          std::vector<std::int64_t>{16, 32});
    CHECK(hf.at("model.layers.0.mlp.gate_proj.weight").first == std::vector<std::int64_t>{48, 32});
    CHECK(hf.at("model.layers.0.mlp.down_proj.weight").first == std::vector<std::int64_t>{32, 48});
  }
  comm.barrier();
  for (const MeshShape mesh : {MeshShape{2, 1, 1}, MeshShape{1, 1, 2}}) {
    o.mesh = mesh;
    o.zero = mesh.dp == 2 ? Zero<3> : Zero<0>;
    llama::Trainer<double> t(comm, llama::Model(c), o, data);
    load_weights(t, written);
    const NamedTensors<double> loaded = collect_parameters(t);
    save_weights(t, saved);
    if (comm.rank() != 0) continue;
    INFO("mesh TP" << mesh.tp << " DP" << mesh.dp);
    CHECK(loaded.size() == params.size());
    for (const auto& [name, want] : params) {
      INFO(name);
      CHECK((loaded.at(name) - want).cwiseAbs().maxCoeff() == 0);
    }
    const io::SafetensorsReader file(saved);
    const std::vector<std::string> listed = file.names();
    std::set<std::string> names(listed.begin(), listed.end()), expected;
    for (const auto& [name, tensor] : hf) expected.insert(name);
    CHECK(names == expected);
    for (const auto& [name, tensor] : hf) {
      INFO(name);
      CHECK(file.info(name).shape == tensor.first);
      CHECK(file.read<double>(name, tensor.first) == tensor.second);
    }
  }
  comm.barrier();
  if (comm.rank() == 0) {
    std::filesystem::remove(written);
    std::filesystem::remove(saved);
  }
}

TEST_CASE("llama: a Hugging Face config.json gives the shape; what the model lacks is refused") {
  TRIDENT_RANKS(1, comm);
  const std::string path = hf_path(comm, "config.json");
  auto read = [&](const std::string& json) {
    std::ofstream(path) << json;
    llama::Config c;
    try {
      llama::read_hf_config(path, c);
    } catch (const Error& e) {
      return std::make_pair(c, std::string(e.what()));
    }
    return std::make_pair(c, std::string());
  };
  const std::string tiny =
      R"("model_type": "llama", "hidden_act": "silu", "vocab_size": 32000, "hidden_size": 2048,
         "intermediate_size": 5632, "num_hidden_layers": 22, "num_attention_heads": 32,
         "num_key_value_heads": 4, "rms_norm_eps": 1e-05, "rope_theta": 10000.0)";
  const auto [c, error] = read("{" + tiny + ", \"tie_word_embeddings\": false}");
  CHECK(error.empty());
  CHECK(c.vocab == 32000);
  CHECK(c.hidden == 2048);
  CHECK(c.ffn() == 5632);
  CHECK(c.layers == 22);
  CHECK(c.heads == 32);
  CHECK(c.kv_heads == 4);
  CHECK(c.norm_eps == 1e-5);
  const std::string lacks = ", which trident's Llama (models/llama/) does not have";
  CHECK(read("{" + tiny + ", \"tie_word_embeddings\": true}").second ==
        path + ": the LM head is tied to the embedding" + lacks);
  CHECK(read("{" + tiny + ", \"rope_scaling\": {\"factor\": 8.0}}").second ==
        path + ": it scales RoPE" + lacks);
  CHECK(read(R"({"hidden_size": 64})").second == path + ": no number \"vocab_size\"");
  CHECK(read("{").second.find(path + ": not a JSON config") == 0);
  std::filesystem::remove(path);
}
