// trident/io/checkpoint_index.hpp: the JSON index of a distributed checkpoint.
//
// The layout of PyTorch DCP's metadata and Megatron's distributed checkpoints: the state is a
// set of global tensors ("param/h.0.attn.c_attn.weight", "exp_avg/...", ...), each stored as
// pieces — a box of the global tensor (offsets and lengths per dimension) held as one tensor
// of one shard file (safetensors, one per rank that saved). A piece's box is a plain slice, so
// any mesh can read the elements it needs whatever mesh wrote them. The index also records the
// step, the model, the mesh it was saved on, and each shard's size and checksum.
//
// parse_index() checks every field it reads; anything malformed is an Error "WHERE: ...".
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../model/model.hpp"
#include "safetensors_format.hpp"

namespace trident::io {

struct CheckpointPiece {
  int shard = 0;                      // index into CheckpointIndex::shards
  std::string key;                    // the tensor's name in that shard file
  std::vector<std::int64_t> offsets;  // the box: per dimension of the global tensor
  std::vector<std::int64_t> lengths;
};

struct CheckpointTensor {
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;  // global shape (1 or 2 dimensions)
  std::vector<CheckpointPiece> pieces;
};

struct CheckpointShard {
  std::string file;  // a file name inside the checkpoint directory
  std::uint64_t bytes = 0;
  std::uint64_t checksum = 0;  // FNV-1a 64 of the file's bytes
};

struct CheckpointIndex {
  int step = 0;            // optimizer steps taken
  ModelDescription model;  // the model's architecture (model/model.hpp, describe())
  std::uint64_t data_seed = 0;
  nlohmann::json about;  // mesh saved on, precision, optimizer, RNG: for people and inspect
  std::vector<CheckpointShard> shards;
  std::map<std::string, CheckpointTensor> tensors;
};

inline std::string hex64(std::uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[i] = digits[v & 15];
  return s;
}

inline std::string to_json(const CheckpointIndex& x) {
  nlohmann::ordered_json j;
  j["format"] = "trident-checkpoint";
  j["version"] = 1;
  j["step"] = x.step;
  j["model"] = nlohmann::ordered_json::object();
  for (const auto& [name, value] : x.model) j["model"][name] = value;
  j["data_seed"] = x.data_seed;
  j["about"] = x.about;
  for (const CheckpointShard& s : x.shards)
    j["shards"].push_back({{"file", s.file}, {"bytes", s.bytes}, {"fnv1a64", hex64(s.checksum)}});
  for (const auto& [name, t] : x.tensors) {
    nlohmann::ordered_json e{{"dtype", to_string(t.dtype)}, {"shape", t.shape}};
    e["pieces"] = nlohmann::ordered_json::array();
    for (const CheckpointPiece& p : t.pieces)
      e["pieces"].push_back(
          {{"shard", p.shard}, {"key", p.key}, {"offsets", p.offsets}, {"lengths", p.lengths}});
    j["tensors"][name] = e;
  }
  return j.dump(1);
}

namespace detail {
// A non-negative integer field no larger than `most`.
inline std::int64_t whole(const nlohmann::json& v, const std::string& what, std::int64_t most) {
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > std::uint64_t(most))
    fail(what + " is " + v.dump() + ", not an integer in [0, " + std::to_string(most) + "]");
  return static_cast<std::int64_t>(v.get<std::uint64_t>());
}
inline std::vector<std::int64_t> wholes(const nlohmann::json& v, const std::string& what) {
  if (!v.is_array()) fail(what + " is not an array");
  std::vector<std::int64_t> out;
  for (const nlohmann::json& d : v) out.push_back(whole(d, what, std::int64_t(1) << 40));
  return out;
}
inline std::uint64_t parse_hex64(const nlohmann::json& v, const std::string& what) {
  if (!v.is_string() || v.get<std::string>().size() != 16) fail(what + " is not 16 hex digits");
  std::uint64_t x = 0;
  for (char c : v.get<std::string>()) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) fail(what + " is not 16 hex digits");
    x = x << 4 | std::uint64_t(d);
  }
  return x;
}

inline CheckpointTensor parse_tensor(const nlohmann::json& e, const std::string& what, int shards) {
  CheckpointTensor t;
  if (!e.is_object() || !e.at("dtype").is_string() ||
      !parse_dtype(e.at("dtype").get<std::string>(), t.dtype))
    fail(what + ": no known \"dtype\"");
  t.shape = wholes(e.at("shape"), what + " shape");
  std::size_t bytes = 0;
  if (t.shape.empty() || t.shape.size() > 2 || !tensor_bytes(t.shape, size_of(t.dtype), bytes))
    fail(what + ": shape " + shape_string(t.shape) + " is not 1 or 2 dimensions of sane size");
  const nlohmann::json& pieces = e.at("pieces");
  if (!pieces.is_array()) fail(what + ": \"pieces\" is not an array");
  for (const nlohmann::json& p : pieces) {
    CheckpointPiece c;
    const std::string at = what + " piece " + std::to_string(t.pieces.size());
    if (!p.is_object() || !p.at("key").is_string()) fail(at + ": no \"key\" string");
    c.shard = static_cast<int>(whole(p.at("shard"), at + " shard", shards - 1));
    c.key = p.at("key").get<std::string>();
    c.offsets = wholes(p.at("offsets"), at + " offsets");
    c.lengths = wholes(p.at("lengths"), at + " lengths");
    if (c.offsets.size() != t.shape.size() || c.lengths.size() != t.shape.size())
      fail(at + ": offsets and lengths need one entry per dimension");
    for (std::size_t d = 0; d < t.shape.size(); ++d)
      if (c.offsets[d] + c.lengths[d] > t.shape[d])
        fail(at + ": the box reaches past the tensor's shape " + shape_string(t.shape));
    t.pieces.push_back(std::move(c));
  }
  return t;
}
}  // namespace detail

// The index in `text`; `where` names it in errors (its path). Throws Error on anything malformed.
inline CheckpointIndex parse_index(const std::string& text, const std::string& where) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object() || j.value("format", "") != "trident-checkpoint" || j.at("version") != 1)
      fail("not a trident checkpoint index (version 1)");
    CheckpointIndex x;
    x.step = static_cast<int>(detail::whole(j.at("step"), "step", 1 << 30));
    const nlohmann::json& m = j.at("model");
    if (!m.is_object()) fail("\"model\" is not an object");
    for (const auto& [name, value] : m.items())
      x.model[name] = detail::whole(value, "model " + name, INT64_MAX);
    x.data_seed =
        static_cast<std::uint64_t>(detail::whole(j.at("data_seed"), "data_seed", INT64_MAX));
    x.about = j.value("about", nlohmann::json::object());
    const nlohmann::json& shards = j.at("shards");
    if (!shards.is_array() || shards.empty()) fail("\"shards\" is not a non-empty array");
    for (const nlohmann::json& s : shards) {
      const std::string what = "shard " + std::to_string(x.shards.size());
      if (!s.is_object() || !s.at("file").is_string()) fail(what + ": no \"file\" string");
      CheckpointShard c;
      c.file = s.at("file").get<std::string>();
      if (c.file.empty() || c.file.find('/') != std::string::npos || c.file[0] == '.')
        fail(what + ": \"" + c.file + "\" is not a plain file name");
      c.bytes =
          static_cast<std::uint64_t>(detail::whole(s.at("bytes"), what + " bytes", INT64_MAX));
      c.checksum = detail::parse_hex64(s.at("fnv1a64"), what + " fnv1a64");
      x.shards.push_back(std::move(c));
    }
    const nlohmann::json& tensors = j.at("tensors");
    if (!tensors.is_object()) fail("\"tensors\" is not an object");
    for (const auto& [name, e] : tensors.items())
      x.tensors[name] =
          detail::parse_tensor(e, "tensor '" + name + "'", static_cast<int>(x.shards.size()));
    return x;
  } catch (const nlohmann::json::exception& e) {
    fail(where + ": " + e.what());
  } catch (const Error& e) {
    fail(where + ": " + e.what());
  }
}

}  // namespace trident::io
