// trident/pp/placement.hpp: which pipeline rank runs which model chunk.
//
// The model is cut into p * v virtual stages (pieces of consecutive layers), g = 0 .. p v - 1;
// each of the p pipeline ranks holds v of them, its chunks 0 .. v-1. Two placements:
//  - looped (Megatron-LM's interleaved assignment, Narayanan et al. 2021 §2.2): chunk c on rank
//    s is virtual stage c p + s, so activations loop 0, 1, ..., p-1, 0, 1, ... and rank p-1's
//    chunk c feeds rank 0's chunk c+1. With v = 1: plain pipeline stages.
//  - V-shape (ZB-V, Qi et al. 2024, "Pipeline Parallelism with Controllable Memory", and the
//    ZB-V schedule of the Zero Bubble repository): even chunks go down the ranks, odd chunks come
//    back up: chunk c on rank s is virtual stage c p + s for even c and (c + 1) p - 1 - s for odd
//    c. With v = 2, rank s holds virtual stages s and 2p-1-s: rank 0 holds the first (the
//    embedding) and the last (the LM head and the loss), and the handoff at the V's bottom,
//    virtual stage p-1 to p, stays on rank p-1.
#pragma once

namespace trident::pp {

enum class ChunkPlacement { looped, v_shape };

inline const char* to_string(ChunkPlacement placement) {
  return placement == ChunkPlacement::looped ? "looped" : "V-shape";
}

// The chunk <-> (rank, chunk) map of p ranks holding v chunks each.
struct ChunkMap {
  ChunkPlacement placement = ChunkPlacement::looped;
  int stages = 1;  // p, pipeline ranks
  int chunks = 1;  // v, model chunks per rank

  int virtual_stages() const { return stages * chunks; }
  bool reversed(int chunk) const { return placement == ChunkPlacement::v_shape && chunk % 2 == 1; }
  // The virtual stage that chunk `chunk` of rank `rank` holds.
  int virtual_stage(int chunk, int rank) const {
    return reversed(chunk) ? (chunk + 1) * stages - 1 - rank : chunk * stages + rank;
  }
  int chunk(int g) const { return g / stages; }
  int rank(int g) const { return reversed(chunk(g)) ? stages - 1 - g % stages : g % stages; }
  bool is_first(int chunk, int rank) const { return virtual_stage(chunk, rank) == 0; }
  bool is_last(int chunk, int rank) const {
    return virtual_stage(chunk, rank) == virtual_stages() - 1;
  }
  // The rank that runs the last virtual stage (the loss): p-1 looped, 0 in a V of 2 chunks.
  int last_rank() const { return rank(virtual_stages() - 1); }
};

}  // namespace trident::pp
