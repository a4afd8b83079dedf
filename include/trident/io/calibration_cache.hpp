// trident/io/calibration_cache.hpp: measurements of this machine kept in a file and reused by the
// next run on the same machine and build (--layout auto's calibration, costmodel/layout.hpp; the
// GEMM peak of MFU, io/hardware_peak.hpp), as DeepSpeed's autotuner and NCCL's tuner keep theirs.
//
// A line per measurement: "<machine>\t<what>\t<values>". `machine` names what the figures depend
// on: the host, the world's ranks and ranks per node, threads per rank, cores, and the build (the
// program's size and modification time: a rebuilt program measures again). `what` names the
// measurement ("compute <shape>", "call <op> <group> <work>", "link <nominal>"). Values carry 17
// significant digits, so that a reused calibration predicts to the bit what the run that measured
// it predicted. World rank 0 reads and writes the file and every rank gets its text, so every
// rank reuses and measures the same things (the measurements are collective). The newest 4096
// lines of other machines and builds are kept; a write goes to a temporary file renamed over the
// old one, so a run never reads half of another's.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../backend/cpu/threads.hpp"
#include "../core/comm.hpp"

namespace trident {

// Where a program keeps its calibrations by default: $TRIDENT_CACHE_DIR, else
// $XDG_CACHE_HOME/trident, else $HOME/.cache/trident; "" when none of them is set.
inline std::string default_calibration_cache() {
  const auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v && *v ? v : "";
  };
  std::string dir = env("TRIDENT_CACHE_DIR");
  if (dir.empty() && !env("XDG_CACHE_HOME").empty()) dir = env("XDG_CACHE_HOME") + "/trident";
  if (dir.empty() && !env("HOME").empty()) dir = env("HOME") + "/.cache/trident";
  return dir.empty() ? "" : dir + "/calibration.tsv";
}

namespace cache_detail {
// "host=a ranks=8 per_node=8 threads=1 cores=2 build=<size>-<mtime>"
inline std::string machine_key(const Comm& world) {
  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  struct stat st {};
  const bool exe = stat("/proc/self/exe", &st) == 0;
  std::ostringstream s;
  s << "host=" << host << " ranks=" << world.size() << " per_node=" << node_comm(world).size()
    << " threads=" << Eigen::nbThreads() << " cores=" << cores_available() << " build="
    << (exe ? std::to_string(st.st_size) + "-" + std::to_string(st.st_mtime) : "unknown");
  return s.str();
}

// World rank 0's `text` on every rank. Collective.
inline std::string from_root(const Comm& world, std::string text) {
  std::int64_t n = static_cast<std::int64_t>(text.size());
  world.broadcast(Span<std::int64_t>(&n, 1), 0);
  text.resize(std::size_t(n));
  if (n > 0) world.broadcast(Span<char>(text.data(), text.size()), 0);
  return text;
}

// World rank 0's text of `path` ("" when it cannot be read), on every rank. Collective.
inline std::string read_on_root(const Comm& world, const std::string& path) {
  std::ostringstream s;
  if (world.rank() == 0) {
    std::ifstream in(path);
    if (in) s << in.rdbuf();
  }
  return from_root(world, s.str());
}
}  // namespace cache_detail

class CalibrationCache {
 public:
  CalibrationCache() = default;  // no file: everything measured

  // Reads `path` ("" for none) on world rank 0; collective (the same key on every rank: world
  // rank 0's host and build).
  CalibrationCache(const Comm& world, std::string path) : path_(std::move(path)) {
    if (path_.empty()) return;
    machine_ =
        cache_detail::from_root(world, cache_detail::machine_key(world));  // node_comm: collective
    std::istringstream lines(cache_detail::read_on_root(world, path_));
    for (std::string line; std::getline(lines, line);) {
      const std::size_t a = line.find('\t'), b = line.find('\t', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;  // comments
      if (line.compare(0, a, machine_) != 0 || a != machine_.size()) {
        others_.push_back(line);
        continue;
      }
      std::istringstream values(line.substr(b + 1));
      std::vector<double>& v = mine_[line.substr(a + 1, b - a - 1)];
      for (double x; values >> x;) v.push_back(x);
    }
  }

  const std::string& path() const { return path_; }
  int reused() const { return reused_; }
  int measured() const { return measured_; }

  // The values of `what` when this machine and build measured it with `count` values.
  std::optional<std::vector<double>> find(const std::string& what, std::size_t count) {
    auto it = mine_.find(what);
    if (it == mine_.end() || it->second.size() != count) return std::nullopt;
    ++reused_;
    return it->second;
  }
  void put(const std::string& what, std::vector<double> values) {
    ++measured_;
    mine_[what] = std::move(values);
  }

  // World rank 0 writes the file (its folder made if missing) when anything was measured; a file
  // that cannot be written is a warning, the run goes on. Returns whether it was written.
  bool save(const Comm& world) const {
    if (path_.empty() || measured_ == 0 || world.rank() != 0) return false;
    const std::size_t slash = path_.rfind('/');
    if (slash != std::string::npos && slash > 0) make_folders(path_.substr(0, slash));
    const std::string temporary = path_ + ".tmp." + std::to_string(getpid());
    {
      std::ofstream out(temporary);
      out << "# trident calibration cache (io/calibration_cache.hpp)\n";
      // other machines' and builds' lines, the newest kMaxOthers (older builds fall out)
      const std::size_t first = others_.size() > kMaxOthers ? others_.size() - kMaxOthers : 0;
      for (std::size_t k = first; k < others_.size(); ++k) out << others_[k] << "\n";
      for (const auto& [what, values] : mine_) {
        out << machine_ << "\t" << what << "\t";
        char number[32];
        for (double x : values) {
          std::snprintf(number, sizeof number, "%.17g ", x);
          out << number;
        }
        out << "\n";
      }
      if (out) out.close();
      if (out && std::rename(temporary.c_str(), path_.c_str()) == 0) return true;
    }
    std::remove(temporary.c_str());
    std::fprintf(stderr, "trident: warning: could not write the calibration cache %s\n",
                 path_.c_str());
    return false;
  }

 private:
  static void make_folders(const std::string& dir) {
    for (std::size_t at = dir.find('/', 1);; at = dir.find('/', at + 1)) {
      mkdir(dir.substr(0, at).c_str(), 0755);
      if (at == std::string::npos) return;
    }
  }
  static constexpr std::size_t kMaxOthers = 4096;
  std::string path_, machine_;
  std::map<std::string, std::vector<double>> mine_;  // this machine's and build's
  std::vector<std::string> others_;                  // lines of others, kept as read
  int reused_ = 0, measured_ = 0;
};

}  // namespace trident
