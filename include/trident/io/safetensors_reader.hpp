// trident/io/safetensors_reader.hpp: reads tensors from a safetensors file, checking it first.
//
// Opening a file reads its header and checks the whole file against the format (see
// safetensors_format.hpp): the header length against the file, the header as a JSON object with
// no repeated key, every entry's dtype, shape and data_offsets, each tensor's byte count against
// its shape and dtype, and that the tensors tile the data section exactly, no byte outside a
// tensor and no byte in two. Any failure is an Error "PATH: what is wrong", the same on every
// rank that reads the same file. A tensor's bytes are read from the file only when asked for.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "safetensors_format.hpp"

namespace trident::io {

class SafetensorsReader {
 public:
  // The reference implementation refuses headers above 100 MB; so do we.
  static constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

  // Reads the header and checks the whole file against the format; throws Error("PATH: ...").
  explicit SafetensorsReader(std::string path) : path_(std::move(path)) { open(); }

  const std::string& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  std::vector<std::string> names() const {
    std::vector<std::string> names;
    for (const auto& entry : tensors_) names.push_back(entry.first);
    return names;
  }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  const TensorInfo& info(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) fail_here("no tensor '" + name + "'");
    return it->second;
  }

  // Copies tensor `name` into out[0, numel). Its dtype must be dtype_of<T>() and its shape
  // `expected_shape`.
  template <class T>
  void read_into(const std::string& name, T* out,
                 const std::vector<std::int64_t>& expected_shape) const {
    read_bytes(checked<T>(name, expected_shape), out);
  }

  template <class T>
  std::vector<T> read(const std::string& name,
                      const std::vector<std::int64_t>& expected_shape) const {
    const TensorInfo& t = checked<T>(name, expected_shape);
    std::vector<T> out(static_cast<std::size_t>(t.numel()));
    read_bytes(t, out.data());
    return out;
  }

 private:
  [[noreturn]] void fail_here(const std::string& what) const { fail(path_ + ": " + what); }

  void open() {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path_, ec)) fail_here("no such file");
    if (!fs::is_regular_file(path_, ec)) fail_here("not a regular file");
    const std::uint64_t file_size = fs::file_size(path_, ec);
    std::ifstream in(path_, std::ios::binary);
    if (ec || !in) fail_here("cannot open the file for reading");
    if (file_size < 8)
      fail_here("the file has " + std::to_string(file_size) +
                " bytes, too few for the 8-byte header length");

    unsigned char length[8];
    in.read(reinterpret_cast<char*>(length), 8);
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | length[i];  // little-endian u64
    const std::string claimed = "header length " + std::to_string(n);
    if (n > kMaxHeaderBytes)
      fail_here(claimed + " exceeds the format's limit of " + std::to_string(kMaxHeaderBytes) +
                " bytes");
    if (n > file_size - 8)
      fail_here(claimed + " exceeds the " + std::to_string(file_size - 8) +
                " bytes that follow it in the file");
    std::string header(n, '\0');
    in.read(header.data(), static_cast<std::streamsize>(n));
    if (!in) fail_here("cannot read the header");

    data_start_ = 8 + n;
    const std::uint64_t data_size = file_size - data_start_;
    const nlohmann::json json = parse_header(header);
    for (const auto& [key, value] : json.items()) {
      if (key == "__metadata__")
        read_metadata(value);
      else
        tensors_.emplace(key, parse_entry(key, value, data_size));
    }
    check_tiling(data_size);
  }

  // The header as JSON: an object beginning with '{' (as the reference reader requires), with no
  // key repeated within an object (which the format forbids and JSON parsers do not check).
  nlohmann::json parse_header(const std::string& header) const {
    std::vector<std::set<std::string>> keys_at_depth;  // keys seen in the open object per depth
    std::string repeated;
    auto watch_keys = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
      const auto d = static_cast<std::size_t>(depth);
      if (event == nlohmann::json::parse_event_t::object_start) {
        keys_at_depth.resize(std::max(keys_at_depth.size(), d + 2));
        keys_at_depth[d + 1].clear();  // an object starting at depth d has its keys at d + 1
      } else if (event == nlohmann::json::parse_event_t::key) {
        if (!keys_at_depth[d].insert(parsed.get<std::string>()).second && repeated.empty())
          repeated = parsed.get<std::string>();
      }
      return true;
    };
    nlohmann::json json;
    try {
      json = nlohmann::json::parse(header, watch_keys);
    } catch (const nlohmann::json::parse_error& e) {
      fail_here(std::string("the header is not valid JSON: ") + e.what());
    }
    if (!json.is_object() || header[0] != '{')
      fail_here("the header is not a JSON object beginning with '{'");
    if (!repeated.empty()) fail_here("the header repeats the key '" + repeated + "'");
    return json;
  }

  void read_metadata(const nlohmann::json& value) {
    if (!value.is_object()) fail_here("\"__metadata__\" is not a JSON object");
    for (const auto& [key, text] : value.items()) {
      if (!text.is_string()) fail_here("\"__metadata__\" entry '" + key + "' is not a string");
      metadata_[key] = text.get<std::string>();
    }
  }

  TensorInfo parse_entry(const std::string& name, const nlohmann::json& entry,
                         std::uint64_t data_size) const {
    const std::string tensor = "tensor '" + name + "': ";
    if (!entry.is_object()) fail_here(tensor + "its entry is not a JSON object");
    auto field = [&](const char* key) -> const nlohmann::json& {
      auto it = entry.find(key);
      if (it == entry.end()) fail_here(tensor + "no \"" + key + "\"");
      return *it;
    };
    TensorInfo t;
    t.name = name;

    const nlohmann::json& dtype = field("dtype");
    if (!dtype.is_string()) fail_here(tensor + "\"dtype\" is not a string");
    if (!parse_dtype(dtype.get<std::string>(), t.dtype))
      fail_here(tensor + "unknown dtype '" + dtype.get<std::string>() + "'");

    const nlohmann::json& shape = field("shape");
    if (!shape.is_array()) fail_here(tensor + "\"shape\" is not an array");
    for (const nlohmann::json& d : shape) {
      if (!d.is_number_unsigned() ||
          d.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
        fail_here(tensor + "\"shape\" holds " + d.dump() + ", not a non-negative integer");
      t.shape.push_back(static_cast<std::int64_t>(d.get<std::uint64_t>()));
    }

    const nlohmann::json& offsets = field("data_offsets");
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      fail_here(tensor + "\"data_offsets\" " + offsets.dump() +
                " is not two non-negative integers");
    t.begin = offsets[0].get<std::size_t>();
    t.end = offsets[1].get<std::size_t>();
    const std::string range = "data_offsets " + offsets.dump();
    if (t.end < t.begin) fail_here(tensor + range + " end before they begin");
    if (t.end > data_size)
      fail_here(tensor + range + " reach past the end of the data section (" +
                std::to_string(data_size) + " bytes)");

    std::size_t bytes = 0;
    if (!detail::tensor_bytes(t.shape, size_of(t.dtype), bytes))
      fail_here(tensor + "shape " + detail::shape_string(t.shape) + " is too large");
    if (bytes != t.end - t.begin)
      fail_here(tensor + range + " hold " + std::to_string(t.end - t.begin) + " bytes, but shape " +
                detail::shape_string(t.shape) + " of " + to_string(t.dtype) + " needs " +
                std::to_string(bytes));
    return t;
  }

  // The tensors, in order of their offsets, must cover the data section without gap or overlap.
  void check_tiling(std::uint64_t data_size) const {
    std::vector<const TensorInfo*> by_offset;
    for (const auto& entry : tensors_) by_offset.push_back(&entry.second);
    std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
      return std::tie(a->begin, a->end, a->name) < std::tie(b->begin, b->end, b->name);
    });
    auto range = [](const TensorInfo& t) {
      return "'" + t.name + "' [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]";
    };
    auto uncovered = [&](std::uint64_t from, std::uint64_t to) {
      fail_here("bytes [" + std::to_string(from) + ", " + std::to_string(to) +
                ") of the data section belong to no tensor");
    };
    std::uint64_t covered = 0;
    const TensorInfo* last = nullptr;
    for (const TensorInfo* t : by_offset) {
      if (t->begin < covered)
        fail_here("the data of tensors " + range(*last) + " and " + range(*t) + " overlap");
      if (t->begin > covered) uncovered(covered, t->begin);
      covered = t->end;
      last = t;
    }
    if (covered != data_size) uncovered(covered, data_size);
  }

  template <class T>
  const TensorInfo& checked(const std::string& name,
                            const std::vector<std::int64_t>& expected_shape) const {
    check_storable<T>();
    const TensorInfo& t = info(name);
    if (t.dtype != dtype_of<T>())
      fail_here("tensor '" + name + "' has dtype " + to_string(t.dtype) + ", expected " +
                to_string(dtype_of<T>()));
    if (t.shape != expected_shape)
      fail_here("tensor '" + name + "' has shape " + detail::shape_string(t.shape) + ", expected " +
                detail::shape_string(expected_shape));
    return t;
  }

  void read_bytes(const TensorInfo& t, void* out) const {
    const std::size_t bytes = t.end - t.begin;
    if (bytes == 0) return;
    std::ifstream in(path_, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(data_start_ + t.begin));
    in.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes));
    if (!in)
      fail_here("cannot read the data of tensor '" + t.name +
                "' (has the file changed since it was opened?)");
  }

  std::string path_;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, TensorInfo> tensors_;
  std::uint64_t data_start_ = 0;  // file offset of the data section: 8 + N
};

}  // namespace trident::io
