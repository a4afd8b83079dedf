// trident/core/shm_all_to_all.hpp: the all-to-all with variable counts (all_to_all.hpp) through
// a communicator's shared-memory segment (shared_memory.hpp), for ranks on one node.
//
//   1. Counts: each rank writes its send and receive counts into its buffer of one round; a
//      barrier; every rank reads the whole matrix, so every rank finds the same mismatch (rank i
//      sends c elements to j, which expects another number) and reports the same error, and
//      the same number of rounds.
//   2. Data, a pipeline of 2 stages over the segment's buffers (shm_collectives.hpp's
//      pipeline): a rank's outgoing data, its send buffer without its own block, is one stream
//      cut into rounds of one buffer (chunk_bytes); in a phase, each rank copies the next round
//      of its stream into its buffer (stage 0) and copies out of every sender's buffer the part
//      of the previous round that is its (stage 1), then the ranks meet at a barrier. Rounds:
//      the longest stream's, so that every rank runs as many phases.
//   3. Its own block: one copy, send to receive, never through the segment.
// Each element that leaves a rank is copied twice (in, out); rounds are numbered across the
// segment's collectives, so the counts' round and the first data round need no barrier before them
// (shm_collectives.hpp, top). The bits received are the bits sent, as with MPI_Alltoallv.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "all_to_all.hpp"
#include "shm_collectives.hpp"

namespace trident::shm {
namespace detail {

// The counts of every rank, read from the segment: sends[i * p + j], what rank i sends to j;
// recvs[j * p + i], what rank j expects from i.
struct CountMatrix {
  int p = 0;
  std::vector<std::int64_t> sends, recvs;
};

// Step 1: publishes this rank's counts, waits for every rank's, reads them all.
inline CountMatrix publish_counts(SharedSegment& s, const a2a::Blocks& send,
                                  const a2a::Blocks& recv, const Waiting& what) {
  const int p = s.size();
  const int b = static_cast<int>(s.next_round(1) % SharedSegment::kBuffers);
  std::int64_t* mine = s.buffer<std::int64_t>(s.rank(), b);  // 2p counts: 16p <= chunk_bytes
  for (int j = 0; j < p; ++j) {
    mine[j] = static_cast<std::int64_t>(send.count[j]);
    mine[p + j] = static_cast<std::int64_t>(recv.count[j]);
  }
  s.barrier(what);
  CountMatrix m{p, std::vector<std::int64_t>(std::size_t(p) * p), {}};
  m.recvs = m.sends;
  for (int i = 0; i < p; ++i) {
    const std::int64_t* theirs = s.buffer<std::int64_t>(i, b);
    std::copy(theirs, theirs + p, m.sends.begin() + std::size_t(i) * p);
    std::copy(theirs + p, theirs + 2 * p, m.recvs.begin() + std::size_t(i) * p);
  }
  return m;
}

// The first pair whose counts disagree, in words; empty when none (the same on every rank).
inline std::string mismatch(const CountMatrix& m) {
  for (int i = 0; i < m.p; ++i)
    for (int j = 0; j < m.p; ++j) {
      const std::int64_t sent = m.sends[std::size_t(i) * m.p + j];
      const std::int64_t expected = m.recvs[std::size_t(j) * m.p + i];
      if (sent != expected)
        return "rank " + std::to_string(i) + " sends " + std::to_string(sent) +
               " elements to rank " + std::to_string(j) + ", which expects " +
               std::to_string(expected);
    }
  return "";
}

// Where the block for rank j lies in rank i's stream (its send blocks in rank order but its own).
inline std::size_t stream_start(const CountMatrix& m, int i, int j) {
  std::size_t at = 0;
  for (int k = 0; k < j; ++k)
    if (k != i) at += static_cast<std::size_t>(m.sends[std::size_t(i) * m.p + k]);
  return at;
}
inline std::size_t stream_length(const CountMatrix& m, int i) {
  return stream_start(m, i, m.p);
}

// Stage 0: elements [at, at + len) of this rank's stream, [0, lo) ++ [hi, total) of `send`,
// into `to`.
template <class T>
void copy_stream(T* to, const T* send, const a2a::Blocks& b, int rank, std::size_t at,
                 std::size_t len) {
  const std::size_t lo = b.start[rank], skip = b.count[rank];
  if (at < lo) {
    const std::size_t first = std::min(len, lo - at);
    std::memcpy(to, send + at, first * sizeof(T));
    to += first;
    at += first;
    len -= first;
  }
  if (len > 0) std::memcpy(to, send + at + skip, len * sizeof(T));
}

}  // namespace detail

// recv's block i <- rank i's block for this rank; the counts as all_to_all.hpp's layout (checked
// on this rank there). Returns what is wrong with the counts across ranks (empty: nothing; then
// nothing was moved but this rank's own block), the same on every rank.
template <class T>
std::string all_to_all_v(SharedSegment& s, const T* send, const a2a::Blocks& sb, T* recv,
                         const a2a::Blocks& rb, const Waiting& what) {
  const int p = s.size(), r = s.rank();
  const detail::CountMatrix m = detail::publish_counts(s, sb, rb, what);
  if (std::string wrong = detail::mismatch(m); !wrong.empty()) return wrong;
  if (sb.count[r] > 0) std::memcpy(recv + rb.start[r], send + sb.start[r], sb.count[r] * sizeof(T));
  const std::size_t per_round = s.chunk_bytes() / sizeof(T), mine = detail::stream_length(m, r);
  std::size_t rounds = 0;
  std::vector<std::size_t> from(static_cast<std::size_t>(p), 0);  // my block in rank i's stream
  for (int i = 0; i < p; ++i) {
    rounds = std::max(rounds, detail::ceil_div(detail::stream_length(m, i), per_round));
    from[i] = detail::stream_start(m, i, r);
  }
  detail::pipeline<2>(s, rounds, what, [&](int step, std::size_t round, int b) {
    const std::size_t lo = round * per_round, hi = lo + per_round;
    if (step == 0) {  // the pipeline's stage 0: copy in
      if (lo < mine)
        detail::copy_stream(s.buffer<T>(r, b), send, sb, r, lo, std::min(hi, mine) - lo);
      return;
    }
    for (int i = 0; i < p; ++i) {
      const std::size_t first = std::max(lo, from[i]), last = std::min(hi, from[i] + rb.count[i]);
      if (i == r || first >= last) continue;
      std::memcpy(recv + rb.start[i] + (first - from[i]), s.buffer<T>(i, b) + (first - lo),
                  (last - first) * sizeof(T));
    }
  });
  return "";
}

}  // namespace trident::shm
