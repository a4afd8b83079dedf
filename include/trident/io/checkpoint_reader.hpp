// trident/io/checkpoint_reader.hpp: reads a checkpoint's global tensors, whatever mesh wrote it.
//
// The index is read and checked on opening; a shard file is opened (its header checked by
// SafetensorsReader, its checksum against the index's) the first time a piece in it is needed.
// A global tensor is assembled from its pieces, each element from exactly one piece (the pieces
// hold as many elements as the tensor and none overlaps).
#pragma once

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint_files.hpp"
#include "checkpoint_index.hpp"
#include "weights.hpp"

namespace trident::io {

class CheckpointReader {
 public:
  // dir: a checkpoint directory (holding index.json).
  explicit CheckpointReader(const fs::path& dir) : dir_(dir) {
    const fs::path path = dir / "index.json";
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path.string() + ": cannot read the checkpoint index");
    std::stringstream text;
    text << in.rdbuf();
    index_ = parse_index(text.str(), path.string());
    shards_.resize(index_.shards.size());
  }

  const fs::path& directory() const { return dir_; }
  const CheckpointIndex& index() const { return index_; }
  bool contains(const std::string& name) const { return index_.tensors.count(name) != 0; }
  const CheckpointTensor& tensor(const std::string& name) const {
    auto it = index_.tensors.find(name);
    if (it == index_.tensors.end())
      fail(dir_.string() + ": the checkpoint has no tensor '" + name + "'");
    return it->second;
  }

  // Shard s, its size and checksum verified against the index (once).
  const SafetensorsReader& shard(int s) {
    if (!shards_.at(s)) {
      const CheckpointShard& c = index_.shards[s];
      const fs::path path = dir_ / c.file;
      std::error_code ec;
      const std::uintmax_t bytes = fs::file_size(path, ec);
      if (ec) fail(path.string() + ": missing shard of the checkpoint");
      if (bytes != c.bytes || file_checksum(path) != c.checksum)
        fail(path.string() +
             ": the shard is corrupt (its size or FNV-1a checksum differs from the "
             "index's)");
      shards_[s] = std::make_unique<SafetensorsReader>(path.string());
    }
    return *shards_[s];
  }

  // Global tensor `name` as T (row-major), checked against `shape`.
  template <class T>
  std::vector<T> read(const std::string& name, const std::vector<std::int64_t>& shape) {
    const CheckpointTensor& t = tensor(name);
    if (t.shape != shape)
      fail(dir_.string() + ": tensor '" + name + "' has shape " + detail::shape_string(t.shape) +
           ", the model needs " + detail::shape_string(shape));
    const std::int64_t cols = shape.back(), numel = t.shape.size() == 2 ? shape[0] * cols : cols;
    std::int64_t listed = 0;  // first from the headers: no allocation an index alone asks for
    for (const CheckpointPiece& p : t.pieces) {
      if (shard(p.shard).info(p.key).shape != p.lengths)
        fail(dir_.string() + ": tensor '" + name + "': piece '" + p.key +
             "' has another shape in its shard than in the index");
      listed += p.lengths.size() == 2 ? p.lengths[0] * p.lengths[1] : p.lengths[0];
    }
    if (listed != numel)
      fail(dir_.string() + ": tensor '" + name + "': its pieces hold " + std::to_string(listed) +
           " elements, it has " + std::to_string(numel));
    std::vector<T> out(static_cast<std::size_t>(numel));
    std::vector<char> seen(out.size(), 0);
    for (const CheckpointPiece& p : t.pieces) {
      const std::vector<T> values = trident::detail::read_as<T>(shard(p.shard), p.key, p.lengths);
      const bool two = p.lengths.size() == 2;
      const std::int64_t row = two ? p.offsets[0] : 0, rows = two ? p.lengths[0] : 1;
      const std::int64_t col = p.offsets.back(), width = p.lengths.back();
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < width; ++j) {
          const std::size_t g = static_cast<std::size_t>((row + i) * cols + col + j);
          if (seen[g]++) fail(dir_.string() + ": tensor '" + name + "' has pieces that overlap");
          out[g] = values[static_cast<std::size_t>(i * width + j)];
        }
    }
    return out;
  }

 private:
  fs::path dir_;
  CheckpointIndex index_;
  std::vector<std::unique_ptr<SafetensorsReader>> shards_;
};

}  // namespace trident::io
