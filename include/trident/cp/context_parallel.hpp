// trident/cp/context_parallel.hpp: the context-parallel group, how it splits a sequence, and the
// ring's one step (ARCHITECTURE §3, context parallelism).
//
// Context parallelism splits every sequence's tokens over CP ranks for the whole decoder: the
// embedding, norms, MLP and loss are local to a rank's tokens; attention alone needs the others'
// keys and values, which travel around the ring (cp/ring_attention.hpp; Liu et al. 2023, "Ring
// Attention with Blockwise Transformers"). Under a causal mask a contiguous split gives rank r
// the r-th block of tokens, whose queries see r + 1 blocks of keys: the last rank does cp times
// the first's work. The zigzag (load-balanced) split of Megatron-Core and Llama 3 (Dubey et al.
// 2024, §3.3.2) cuts the sequence into 2 cp chunks and gives rank r chunks r and 2cp - 1 - r,
// so that every rank sees the same number of (query, key) pairs:
//
//     seq = 8 chunks, cp = 4      rank 0: chunks 0, 7    rank 1: 1, 6
//                                 rank 2: 2, 5           rank 3: 3, 4
//
// A rank's tokens are its chunks in order; nn::TokenPositions maps them to global positions
// (data/tokens.hpp, cp_slice: a microbatch's rows of them).
// The group is the mesh's cp() ring (mesh/mesh.hpp); CP = 1 is the identity (no group).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "../backend/device_comm.hpp"
#include "../core/error.hpp"
#include "../nn/positions.hpp"

namespace trident {

enum class CpSplit { zigzag, contiguous };

inline const char* to_string(CpSplit s) {
  return s == CpSplit::zigzag ? "zigzag" : "contiguous";
}
inline CpSplit cp_split_from_string(const std::string& s) {
  require(s == "zigzag" || s == "contiguous",
          "--cp-split: expected zigzag or contiguous, got '" + s + "'");
  return s == "zigzag" ? CpSplit::zigzag : CpSplit::contiguous;
}

// The tokens per sequence a CP split needs: a multiple of 2 cp (zigzag) or cp (contiguous).
inline void validate_cp_split(int seq, int cp, CpSplit split) {
  const int unit = split == CpSplit::zigzag ? 2 * cp : cp;
  require(cp >= 1, "--cp must be at least 1, got " + std::to_string(cp));
  require(cp == 1 || seq % unit == 0,
          "context parallelism: the sequence of " + std::to_string(seq) +
              " tokens is not divisible" + " into " + std::to_string(unit) + " chunks (" +
              to_string(split) + " split, CP=" + std::to_string(cp) +
              (split == CpSplit::zigzag ? ": 2 chunks per rank)" : ")"));
}

// A rank's chunks: (first global position, tokens) each, in local order.
inline std::vector<std::pair<int, int>> cp_chunks(int seq, int cp, int rank, CpSplit split) {
  if (cp == 1) return {{0, seq}};
  if (split == CpSplit::contiguous) return {{rank * (seq / cp), seq / cp}};
  const int c = seq / (2 * cp);
  return {{rank * c, c}, {(2 * cp - 1 - rank) * c, c}};
}

// The positions of rank `rank`'s tokens (nn/positions.hpp).
inline nn::TokenPositions cp_positions(int seq, int cp, int rank, CpSplit split) {
  const auto chunks = cp_chunks(seq, cp, rank, split);
  nn::TokenPositions p;
  p.chunk = chunks[0].second;
  p.first = chunks[0].first;
  p.second = chunks.size() > 1 ? chunks[1].first : 0;
  return p;
}

template <class B>
struct ContextParallel {
  backend::DeviceComm<B> ring;  // not valid(): CP = 1
  CpSplit split = CpSplit::zigzag;

  int size() const { return ring.size(); }
  int rank() const { return ring.rank(); }
  int next() const { return (rank() + 1) % size(); }
  int prev() const { return (rank() + size() - 1) % size(); }
  // Tokens per sequence on a rank, of `seq` in all; and the reverse.
  int local_seq(int seq) const { return seq / size(); }
  // The positions of rank r's tokens (this rank's by default), `local` tokens per sequence.
  nn::TokenPositions positions(int local, int r) const {
    return cp_positions(local * size(), size(), r, split);
  }
  nn::TokenPositions positions(int local) const { return positions(local, rank()); }
  std::vector<std::pair<int, int>> chunks(int local, int r) const {
    return cp_chunks(local * size(), size(), r, split);
  }

  // The rank holding global position p of a sequence (local tokens each), and p's index there.
  std::pair<int, int> locate(int p, int local) const {
    for (int r = 0; r < size(); ++r) {
      const nn::TokenPositions at = positions(local, r);
      for (int s = 0; s < local; ++s)
        if (at(s) == p) return {r, s};
    }
    fail("context parallelism: position " + std::to_string(p) + " is outside the sequence");
  }

  // One step of the ring: `send` (n) to the next rank, `recv` (n) from the previous one, posted
  // now; wait() on both before reading recv or writing send. On the nccl path (in order,
  // untagged) the exchange runs at once, grouped, and the requests are done.
  struct Shift {
    backend::DeviceRequest to_next, from_prev;
    void wait() {
      to_next.wait();
      from_prev.wait();
    }
  };
  template <class T>
  [[nodiscard]] Shift shift(const T* send, T* recv, std::size_t n, int tag) const {
    Shift s;
    if (ring.path() == backend::CollectivePath::nccl) {
      ring.group_start();
      ring.nccl_send(send, n, next());
      ring.nccl_recv(recv, n, prev());
      ring.group_end();
      return s;
    }
    s.from_prev = ring.irecv(recv, n, prev(), tag);
    s.to_next = ring.isend(send, n, next(), tag);
    return s;
  }
};

}  // namespace trident
