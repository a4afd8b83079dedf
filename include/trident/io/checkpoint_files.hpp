// trident/io/checkpoint_files.hpp: the files of a checkpoint directory, written atomically.
//
//   DIR/step-00000005/index.json                    the index (checkpoint_index.hpp)
//   DIR/step-00000005/shard-00003-of-00008.safetensors   world rank 3's pieces
//
// A checkpoint is written into DIR/.tmp-step-00000005, every file fsync'ed, then the directory
// renamed to DIR/step-00000005 (rename is atomic on POSIX file systems) and DIR fsync'ed: a
// directory named step-N is complete, whatever happened to the job while it was written.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../core/error.hpp"

namespace trident::io {

namespace fs = std::filesystem;

inline std::string checkpoint_name(int step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08d", step);
  return name;
}
inline std::string shard_file_name(int rank, int ranks) {
  char name[64];
  std::snprintf(name, sizeof name, "shard-%05d-of-%05d.safetensors", rank, ranks);
  return name;
}

// Flushes a file's (or a directory's) contents to the storage device.
inline void fsync_path(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) fail(path.string() + ": cannot open it to fsync");
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) fail(path.string() + ": fsync failed");
}

// FNV-1a 64 (Fowler, Noll, Vo) of a file's bytes: a checksum against torn or corrupted files
// (not against tampering).
inline std::uint64_t file_checksum(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string() + ": cannot open the file for reading");
  std::uint64_t h = 0xcbf29ce484222325ULL;
  std::vector<char> block(1 << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    for (std::streamsize k = 0; k < in.gcount(); ++k)
      h = (h ^ static_cast<unsigned char>(block[k])) * 0x100000001b3ULL;
  }
  return h;
}

// The step of a directory named step-N, or -1.
inline int checkpoint_step(const fs::path& dir) {
  const std::string name = dir.filename().string();
  if (name.size() != 13 || name.compare(0, 5, "step-") != 0) return -1;
  int step = 0;
  for (std::size_t k = 5; k < name.size(); ++k) {
    if (name[k] < '0' || name[k] > '9') return -1;
    step = step * 10 + (name[k] - '0');
  }
  return step;
}

// The complete checkpoints in `dir` (step-N directories with an index), oldest first.
inline std::vector<fs::path> complete_checkpoints(const fs::path& dir) {
  std::vector<std::pair<int, fs::path>> found;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const int step = checkpoint_step(e.path());
    if (step >= 0 && fs::is_regular_file(e.path() / "index.json", ec))
      found.push_back({step, e.path()});
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

// `path` itself when it holds an index.json, else the newest complete checkpoint in it; empty
// when `path` is a directory with none.
inline fs::path resolve_checkpoint(const fs::path& path) {
  std::error_code ec;
  if (fs::is_regular_file(path / "index.json", ec)) return path;
  if (!fs::is_directory(path, ec))
    fail(path.string() + ": no such checkpoint or checkpoint directory");
  const std::vector<fs::path> all = complete_checkpoints(path);
  return all.empty() ? fs::path() : all.back();
}

// Renames the finished temporary directory to its final name, then keeps the newest `keep`
// complete checkpoints (keep <= 0: all) and removes leftovers of interrupted saves.
inline void publish_checkpoint(const fs::path& tmp, const fs::path& final_dir, int keep) {
  const fs::path dir = final_dir.parent_path();
  fsync_path(tmp);
  std::error_code ec;
  fs::remove_all(final_dir, ec);  // a checkpoint of the same step from an earlier run
  fs::rename(tmp, final_dir, ec);
  if (ec) fail(final_dir.string() + ": cannot rename the checkpoint into place: " + ec.message());
  fsync_path(dir);
  const std::vector<fs::path> all = complete_checkpoints(dir);
  for (std::size_t k = 0; keep > 0 && k + keep < all.size(); ++k) fs::remove_all(all[k], ec);
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind(".tmp-step-", 0) == 0) fs::remove_all(e.path(), ec);
}

}  // namespace trident::io
