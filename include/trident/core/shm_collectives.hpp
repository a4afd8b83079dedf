// trident/core/shm_collectives.hpp: all-reduce, reduce-scatter, all-gather and broadcast through
// a communicator's shared-memory segment (shared_memory.hpp), for ranks on one node.
//
// Each collective cuts the message into rounds that fit one buffer and runs them as a pipeline
// of stages over the segment's 3 buffers: in phase t, stage s works on round t - s (in buffer
// (t - s) mod 3), then the ranks meet at a barrier. One barrier per round, whatever the stages:
//   all_reduce      0: copy my round in   1: reduce my part of it   2: copy the others' parts out
//    (2 ranks, small) 0: copy my round in 1: reduce all of it
//   reduce_scatter  0: copy my round in   1: reduce my shard's piece, straight into the output
// (A rank never copies in what only it reads: its own part, or its own shard's piece.)
//   all_gather      0: copy my piece in   1: copy every piece out (gather: the root only)
//   broadcast       0: root copies in     1: the others copy out
// A buffer is written again 3 rounds after it was written, when every rank has passed the
// barriers since its last reads. Rounds are numbered across the collectives of a segment, so
// the last phase of a collective needs no barrier: the next collective's first phase writes the
// next round's buffer, which no rank still reads (its readers finished before the barrier that
// every rank passed since), and its first barrier waits for every rank to have finished this one.
// One barrier fewer per collective; a rank that goes on computing does not wait for the others.
//
// Fixed reduction order: element i of a part is ((x_0 + x_1) + x_2) + ... + x_{p-1} over the
// ranks in order, always, so results are bitwise identical from run to run (MPI's order
// depends on its algorithm). Memory traffic: each input read once, each output written once,
// plus the reads and writes of the segment, which stay in cache (a round is small).
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "bf16.hpp"
#include "datatype.hpp"
#include "shared_memory.hpp"
#include "shared_window.hpp"
#include "span.hpp"

namespace trident::shm {

// The element types this path reduces; sums of bf16 are widened to float and rounded once per
// addition, as datatype.hpp's bf16_sum does.
template <class T>
inline constexpr bool kReducible = std::is_arithmetic_v<T> || std::is_same_v<T, bf16>;

namespace detail {

template <class T>
T combine(T a, T b, ReduceOp op) {
  if constexpr (std::is_same_v<T, bf16>) {
    return bf16(static_cast<float>(a) + static_cast<float>(b));  // only sums on bf16
  } else {
    return op == ReduceOp::sum ? a + b : op == ReduceOp::max ? std::max(a, b) : std::min(a, b);
  }
}

// out[i] <- x_0[i] op x_1[i] op ... op x_{p-1}[i], left to right, for i in [0, n), where
// x_of(j, at) points at element `at` of rank j's input. Blocks of kBlock elements are summed in
// a local accumulator (L1), the first two inputs added as they are loaded and the last as the
// result is stored, so out may be one of the inputs (the same element is read, then written).
inline constexpr std::size_t kBlock = 1024;  // elements summed at a time, in L1

template <class T, class X>
void reduce_in_rank_order(int p, X&& x_of, std::size_t n, T* out, ReduceOp op) {
  T acc[kBlock];
  // to[i] = a[i] op c[i]; sums vectorized (the common case)
  auto combine_into = [op](T* to, const T* a, const T* c, std::size_t m) {
    if constexpr (!std::is_same_v<T, bf16>) {
      if (op == ReduceOp::sum) {
#pragma omp simd
        for (std::size_t i = 0; i < m; ++i) to[i] = a[i] + c[i];
        return;
      }
    }
    for (std::size_t i = 0; i < m; ++i) to[i] = combine(a[i], c[i], op);
  };
  for (std::size_t at = 0; at < n; at += kBlock) {
    const std::size_t m = std::min(kBlock, n - at);
    const T* sum = x_of(0, at);  // x_0 op ... op x_j so far
    for (int j = 1; j < p; ++j) {
      T* to = j + 1 < p ? acc : out + at;
      combine_into(to, sum, x_of(j, at), m);
      sum = to;
    }
    if (p == 1 && sum != out + at) std::memcpy(out + at, sum, m * sizeof(T));
  }
}

// reduce_in_rank_order over rank j's buffer b from element `first`, except this rank's own x,
// read from `mine` (never copied to the segment); out2 (when not null) gets a copy of out.
template <class T>
void reduce_buffers(const SharedSegment& s, int b, std::size_t first, std::size_t n, const T* mine,
                    T* out, T* out2, ReduceOp op) {
  auto x_of = [&](int j, std::size_t at) -> const T* {
    return j == s.rank() ? mine + at : s.buffer<T>(j, b) + first + at;
  };
  reduce_in_rank_order(s.size(), x_of, n, out, op);
  if (out2) std::memcpy(out2, out, n * sizeof(T));
}

// Copies [0, len) of `from` to `to` but for [skip_lo, skip_hi).
template <class T>
void copy_around(T* to, const T* from, std::size_t len, std::size_t skip_lo, std::size_t skip_hi) {
  std::memcpy(to, from, skip_lo * sizeof(T));
  std::memcpy(to + skip_hi, from + skip_hi, (len - skip_hi) * sizeof(T));
}

// Runs rounds 0..rounds-1 of a collective through `Stages` stages; stage(s, round, buffer).
// The segment numbers rounds across collectives (s.next_round()): round k of this collective
// is the segment's round g + k, in buffer (g + k) mod 3, so the next collective starts without
// waiting for this one's last phase (it writes another buffer; see the top of this file).
template <int Stages, class Stage>
void pipeline(SharedSegment& s, std::size_t rounds, const Waiting& what, Stage&& stage) {
  static_assert(Stages <= SharedSegment::kBuffers, "a round's buffer is reused after kBuffers");
  const std::size_t first = s.next_round(rounds), phases = rounds + Stages - 1;
  for (std::size_t t = 0; t < phases; ++t) {
    for (int k = Stages - 1; k >= 0; --k) {
      const std::size_t stage_k = static_cast<std::size_t>(k);
      if (t >= stage_k && t - stage_k < rounds)
        stage(k, t - stage_k, static_cast<int>((first + t - stage_k) % SharedSegment::kBuffers));
    }
    if (t + 1 < phases) s.barrier(what);
  }
}

inline std::size_t ceil_div(std::size_t a, std::size_t b) {
  return (a + b - 1) / b;
}

}  // namespace detail

// buf <- op over the group of buf, in place. Rank r reduces part r of each round, elements
// [len r / p, len (r+1) / p) of the round's len, into its output and its buffer, and copies the
// others' parts out. Per rank and element: the input read once and the output written once
// (plus segment traffic, in cache), whatever p; at 2 ranks, the reduce-scatter of halves then
// the copy of the peer's half. Except small messages of 2 ranks (up to kWholeRoundBytes), where
// a barrier costs more than the bytes: both ranks add all of each round (both inputs, in rank
// order: the same bits on both), one stage fewer.
inline constexpr std::size_t kWholeRoundBytes = 32 << 10;

template <class T>
void all_reduce(SharedSegment& s, Span<T> buf, ReduceOp op, const Waiting& what) {
  const int p = s.size(), r = s.rank();
  const std::size_t n = buf.size(), per_round = s.chunk_bytes() / sizeof(T);
  const std::size_t rounds = detail::ceil_div(n, per_round);
  auto round_of = [&](std::size_t round, std::size_t& off) {
    off = round * per_round;
    return std::min(per_round, n - off);
  };
  if (p == 2 && buf.bytes() <= kWholeRoundBytes) {
    detail::pipeline<2>(s, rounds, what, [&](int stage, std::size_t round, int b) {
      std::size_t off = 0;
      const std::size_t len = round_of(round, off);
      T* mine = buf.data() + off;
      if (stage == 0)
        std::memcpy(s.buffer<T>(r, b), mine, len * sizeof(T));
      else
        detail::reduce_buffers(s, b, 0, len, mine, mine, static_cast<T*>(nullptr), op);
    });
    return;
  }
  auto part = [&](std::size_t len, int j) { return len * static_cast<std::size_t>(j) / p; };
  detail::pipeline<3>(s, rounds, what, [&](int stage, std::size_t round, int b) {
    std::size_t off = 0;
    const std::size_t len = round_of(round, off);
    const std::size_t lo = part(len, r), hi = part(len, r + 1);
    if (stage == 0) {
      detail::copy_around(s.buffer<T>(r, b), buf.data() + off, len, lo, hi);
    } else if (stage == 1) {
      T* mine = buf.data() + off + lo;  // the result goes back there and to the segment
      detail::reduce_buffers(s, b, lo, hi - lo, mine, s.buffer<T>(r, b) + lo, mine, op);
    } else {
      for (int j = 0; j < p; ++j) {
        if (j == r) continue;
        const std::size_t lo_j = part(len, j), hi_j = part(len, j + 1);
        std::memcpy(buf.data() + off + lo_j, s.buffer<T>(j, b) + lo_j, (hi_j - lo_j) * sizeof(T));
      }
    }
  });
}

// out <- shard `rank` of the sum of `in`; in: (p * n), out: (n). A round holds one piece of
// each of the p shards of this rank's input.
template <class T>
void reduce_scatter(SharedSegment& s, Span<const T> in, Span<T> out, const Waiting& what) {
  const int p = s.size(), r = s.rank();
  const std::size_t n = out.size(), per_round = s.chunk_bytes() / sizeof(T) / p;
  detail::pipeline<2>(
      s, detail::ceil_div(n, per_round), what, [&](int stage, std::size_t round, int b) {
        const std::size_t off = round * per_round, len = std::min(per_round, n - off);
        if (stage == 0) {
          for (int j = 0; j < p; ++j)
            if (j != r)
              std::memcpy(s.buffer<T>(r, b) + j * len, in.data() + j * n + off, len * sizeof(T));
        } else {
          detail::reduce_buffers<T>(s, b, r * len, len, in.data() + r * n + off, out.data() + off,
                                    nullptr, ReduceOp::sum);
        }
      });
}

// In place over the ranks' arrays of a shared window (shared_window.hpp), for each range
// [offset, offset + n) of T (n divisible by p): rank r sums shard r, elements [offset + r n / p,
// offset + (r + 1) n / p) of every rank's array, in rank order as above. With `all` (an
// all-reduce) it writes each block of its sums into every rank's array, the block's inputs
// read before; without (a reduce-scatter that leaves each shard with its owner) into its own.
// No copy in: each input is read where it lies; per element of the message, p reads and (all)
// p writes over the group, where summing into the owner's array and copying out again costs
// p + (p - 1) reads and p writes. On entry every rank's array holds its input; on return
// every rank may write its own again. Barriers: before the sums and after them.
struct WindowRange {
  std::size_t offset, n;
};

template <class T>
void reduce_in_window(SharedSegment& s, const SharedWindow& w,
                      const std::vector<WindowRange>& ranges, bool all, const Waiting& what) {
  using detail::kBlock;
  const int p = s.size(), r = s.rank();
  s.barrier(what);
  T sums[kBlock];
  for (const WindowRange& g : ranges) {
    const std::size_t shard = g.n / p, first = g.offset + r * shard;
    for (std::size_t at = 0; at < shard; at += kBlock) {
      const std::size_t m = std::min(kBlock, shard - at);
      auto x_of = [&](int j, std::size_t k) -> const T* { return w.of<T>(j) + first + at + k; };
      T* out = all ? sums : w.of<T>(r) + first + at;  // out may be x_r: read, then written
      detail::reduce_in_rank_order(p, x_of, m, out, ReduceOp::sum);
      for (int j = 0; all && j < p; ++j)
        std::memcpy(w.of<T>((r + j) % p) + first + at, sums, m * sizeof(T));
    }
  }
  s.barrier(what);
}

// In place over the ranks' arrays of a shared window, for each range [offset, offset + n) of T
// (n divisible by p): rank r writes shard r of its own array (elements [offset + r n / p,
// offset + (r + 1) n / p)) into every other rank's array at the same place: an all-gather whose
// pieces already lie where the others read them. On entry every rank's array holds its shard;
// no rank reads another's shards until the end. Barriers: before the copies and after them.
template <class T>
void gather_in_window(SharedSegment& s, const SharedWindow& w,
                      const std::vector<WindowRange>& ranges, const Waiting& what) {
  const int p = s.size(), r = s.rank();
  s.barrier(what);
  for (const WindowRange& g : ranges) {
    const std::size_t shard = g.n / p, first = g.offset + r * shard;
    for (int j = 1; j < p; ++j)
      std::memcpy(w.of<T>((r + j) % p) + first, w.of<T>(r) + first, shard * sizeof(T));
  }
  s.barrier(what);
}

// out <- the shards `in` of all ranks in rank order; in: (n), out: (p * n), written on `root`
// only (read nowhere else), or on every rank when root < 0.
template <class T>
void gather(SharedSegment& s, Span<const T> in, Span<T> out, int root, const Waiting& what) {
  const int p = s.size(), r = s.rank();
  const std::size_t n = in.size(), per_round = s.chunk_bytes() / sizeof(T);
  const bool receives = root < 0 || r == root;
  detail::pipeline<2>(
      s, detail::ceil_div(n, per_round), what, [&](int stage, std::size_t round, int b) {
        const std::size_t off = round * per_round, len = std::min(per_round, n - off);
        if (stage == 0) {
          std::memcpy(s.buffer<T>(r, b), in.data() + off, len * sizeof(T));
        } else if (receives) {
          for (int j = 0; j < p; ++j)
            std::memcpy(out.data() + j * n + off, s.buffer<T>(j, b), len * sizeof(T));
        }
      });
}
template <class T>
void all_gather(SharedSegment& s, Span<const T> in, Span<T> out, const Waiting& what) {
  gather(s, in, out, -1, what);
}

// buf <- root's buf.
template <class T>
void broadcast(SharedSegment& s, Span<T> buf, int root, const Waiting& what) {
  const std::size_t n = buf.size(), per_round = s.chunk_bytes() / sizeof(T);
  const bool is_root = s.rank() == root;
  detail::pipeline<2>(
      s, detail::ceil_div(n, per_round), what, [&](int stage, std::size_t round, int b) {
        const std::size_t off = round * per_round, len = std::min(per_round, n - off);
        if (stage == 0 && is_root)
          std::memcpy(s.buffer<T>(root, b), buf.data() + off, len * sizeof(T));
        else if (stage == 1 && !is_root)
          std::memcpy(buf.data() + off, s.buffer<T>(root, b), len * sizeof(T));
      });
}

}  // namespace trident::shm
