// trident/core/stats.hpp: CommStats, the count of every communication this process makes.
//
// Convention (what one call adds), so that formulas can be checked against the counts:
//  - calls:   +1 per operation (a nonblocking operation counts when it is started).
//  - bytes:   the size of the whole logical buffer on this rank, independent of the algorithm:
//               all_reduce, broadcast, reduce ...... the buffer (count * sizeof(T))
//               reduce_scatter ..................... the full input (group size * shard)
//               all_gather ......................... the full output (group size * shard)
//               send / recv ........................ the message
//               all_to_all ......................... what this rank sends: the sum of its send
//                                                    counts (its own block included) * sizeof(T)
//    Algorithmic factors such as the ring's 2(n-1)/n are formulas applied on top, never counted
//    (wire_bytes, below: what a rank sends). An all-to-all's own block stays on its rank: counted
//    in `bytes` as above and again in `kept`, so that its wire bytes are bytes - kept exactly,
//    whatever the counts.
//    The ZeRO paper's "communication volume" of an all-reduce of Psi elements is 2 Psi, of a
//    reduce-scatter or all-gather Psi (Rajbhandari et al. 2020, §7): see paper_volume().
//  - seconds: wall time spent inside the call and inside its wait.
//  - group:   the size of the communicator, kept per communicator name.
// A communicator of one rank moves nothing and counts nothing.
// Counts are per process, keyed by communicator name ("tp", "pp", "dp", ...) and operation.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace trident {

enum class CommOp {
  all_reduce,
  reduce_scatter,
  all_gather,
  broadcast,
  reduce,
  send,
  recv,
  barrier,
  all_to_all  // variable counts per peer (Comm::all_to_all_v, core/all_to_all.hpp)
};
inline constexpr int kCommOps = 9;

inline const char* to_string(CommOp op) {
  constexpr const char* names[kCommOps] = {"all_reduce", "reduce_scatter", "all_gather",
                                           "broadcast",  "reduce",         "send",
                                           "recv",       "barrier",        "all_to_all"};
  return names[static_cast<int>(op)];
}

struct OpCount {
  std::uint64_t calls = 0;
  std::uint64_t bytes = 0;
  std::uint64_t kept = 0;  // of bytes, those that stay on this rank (an all-to-all's own block)
  double seconds = 0;

  OpCount& operator+=(const OpCount& o) {
    calls += o.calls;
    bytes += o.bytes;
    kept += o.kept;
    seconds += o.seconds;
    return *this;
  }
};

struct CommCounts {
  int group_size = 0;
  std::array<OpCount, kCommOps> ops{};

  OpCount& operator[](CommOp op) { return ops[static_cast<int>(op)]; }
  const OpCount& operator[](CommOp op) const { return ops[static_cast<int>(op)]; }

  OpCount total() const {
    OpCount sum;
    for (const OpCount& c : ops) sum += c;
    return sum;
  }
  // Bytes in the ZeRO paper's units: an all-reduce moves 2x its buffer (reduce-scatter then
  // all-gather), the other collectives and point-to-point 1x.
  std::uint64_t paper_volume() const {
    std::uint64_t v = 0;
    for (int i = 0; i < kCommOps; ++i) {
      const auto op = static_cast<CommOp>(i);
      if (op == CommOp::recv || op == CommOp::barrier) continue;  // a recv pairs a send
      v += (op == CommOp::all_reduce ? 2 : 1) * ops[i].bytes;
    }
    return v;
  }
};

// What a rank of a group of n puts on the wire for a counted buffer of `bytes`, with the
// bandwidth-optimal algorithms (a ring, or recursive halving and doubling: Thakur et al. 2005):
// all-reduce 2(n-1)/n of it (a reduce-scatter then an all-gather), reduce-scatter, all-gather,
// broadcast and reduce (n-1)/n, a send all of it, a receive nothing; an all-to-all (n-1)/n of
// it when its counts are even (the one block of n that stays), else exactly what leaves the
// rank: its send counts but its own block (wire_bytes of CommCounts, below, from `kept`).
inline double wire_bytes(CommOp op, int n, double bytes) {
  const double share = n > 1 ? double(n - 1) / n : 0;
  switch (op) {
    case CommOp::all_reduce:
      return 2 * share * bytes;
    case CommOp::send:
      return bytes;
    case CommOp::recv:
    case CommOp::barrier:
      return 0;
    default:
      return share * bytes;
  }
}
inline double wire_bytes(const CommCounts& c) {
  double sum = 0;
  for (int i = 0; i < kCommOps; ++i) {
    const auto op = static_cast<CommOp>(i);
    const OpCount& o = c.ops[i];
    sum += op == CommOp::all_to_all ? double(o.bytes - o.kept)
                                    : wire_bytes(op, c.group_size, double(o.bytes));
  }
  return sum;
}

class CommStats {
 public:
  void record(const std::string& comm, int group_size, CommOp op, std::uint64_t bytes) {
    CommCounts& c = counts_[comm];
    c.group_size = group_size;
    c[op].calls += 1;
    c[op].bytes += bytes;
  }
  // The bytes of an operation recorded above that stay on this rank (OpCount::kept).
  void add_kept(const std::string& comm, CommOp op, std::uint64_t bytes) {
    counts_[comm][op].kept += bytes;
  }
  void add_seconds(const std::string& comm, CommOp op, double seconds) {
    counts_[comm][op].seconds += seconds;
  }

  // Counts of one communicator (zeros when it never communicated).
  CommCounts of(const std::string& comm) const {
    auto it = counts_.find(comm);
    return it == counts_.end() ? CommCounts{} : it->second;
  }
  const std::map<std::string, CommCounts>& all() const { return counts_; }
  void reset() { counts_.clear(); }

 private:
  std::map<std::string, CommCounts> counts_;
};

// The process-wide counter every Comm reports to.
inline CommStats& comm_stats() {
  static CommStats stats;
  return stats;
}

}  // namespace trident
