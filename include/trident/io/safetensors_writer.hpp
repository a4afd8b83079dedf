// trident/io/safetensors_writer.hpp: collects tensors and writes them as one safetensors file.
//
// The writer orders the data by element size, largest first, and pads the JSON header with
// spaces to a multiple of 8 bytes, so every tensor starts aligned to its element size (as the
// reference writer does). The header lists "__metadata__" first, then the tensors in data order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "safetensors_format.hpp"

namespace trident::io {

namespace detail {
// Throws unless `text` is valid UTF-8 (JSON strings must be).
inline void require_utf8(const std::string& text, const std::string& what) {
  try {
    (void)nlohmann::json(text).dump();
  } catch (const nlohmann::json::type_error&) {
    fail("safetensors writer: " + what + " is not valid UTF-8");
  }
}
}  // namespace detail

class SafetensorsWriter {
 public:
  // Copies the numel(shape) elements at `data` as tensor `name`.
  template <class T>
  void add(const std::string& name, const T* data, std::vector<std::int64_t> shape) {
    check_storable<T>();
    const std::string tensor = "safetensors writer: tensor '" + name + "'";
    if (name == "__metadata__") fail(tensor + ": the name is reserved for metadata");
    if (tensors_.count(name)) fail(tensor + " was already added");
    detail::require_utf8(name, "tensor name '" + name + "'");
    std::size_t bytes = 0;
    if (!detail::tensor_bytes(shape, sizeof(T), bytes))
      fail(tensor + " has an invalid shape " + detail::shape_string(shape));
    if (bytes != 0 && data == nullptr) fail(tensor + " has no data");
    Entry& e = tensors_[name];
    e.dtype = dtype_of<T>();
    e.shape = std::move(shape);
    e.bytes.resize(bytes);
    if (bytes != 0) std::memcpy(e.bytes.data(), data, bytes);
  }

  void set_metadata(const std::string& key, const std::string& value) {
    detail::require_utf8(key, "metadata key '" + key + "'");
    detail::require_utf8(value, "metadata value of '" + key + "'");
    metadata_[key] = value;
  }

  // Writes every tensor added so far to `path`, replacing any file there. Call it on one rank.
  void write(const std::string& path) const {
    // Largest elements first, then by name: with the data 8-byte aligned, each tensor then
    // starts at a multiple of its element size.
    std::vector<const std::pair<const std::string, Entry>*> order;
    for (const auto& entry : tensors_) order.push_back(&entry);
    std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
      return size_of(a->second.dtype) > size_of(b->second.dtype);
    });

    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata_.empty()) header["__metadata__"] = metadata_;
    std::size_t offset = 0;
    for (const auto* entry : order) {
      const Entry& e = entry->second;
      header[entry->first] = {{"dtype", to_string(e.dtype)},
                              {"shape", e.shape},
                              {"data_offsets", {offset, offset + e.bytes.size()}}};
      offset += e.bytes.size();
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');

    char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) fail(path + ": cannot open the file for writing");
    out.write(length, 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto* entry : order) {
      const std::vector<char>& bytes = entry->second.bytes;
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    out.close();
    if (!out) fail(path + ": writing the file failed");
  }

 private:
  struct Entry {
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
    std::vector<char> bytes;
  };
  std::map<std::string, Entry> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace trident::io
