// tests/shm_testing.hpp: what the tests of the shared-memory collectives share.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <trident/core/comm.hpp>

namespace trident::test {

// Runs `body` with the blocking collectives on the shared-memory path at every size (on) or on
// MPI's path (off); `chunk_bytes`, when not 0, sets the pipeline buffer of segments made inside
// `body`, whether their group fits its cores or not.
template <class Body>
void with_shm(bool on, Body&& body, std::size_t chunk_bytes = 0) {
  const ShmTuning saved = shm_tuning();
  shm_tuning().enabled = on;
  shm_tuning().min_bytes = 0;
  if (chunk_bytes) shm_tuning().chunk_bytes = shm_tuning().oversubscribed_chunk_bytes = chunk_bytes;
  body();
  shm_tuning() = saved;
}

// Inputs whose sum depends on the order of the additions: magnitudes spread over 2^-20..2^20.
template <class T>
std::vector<T> order_sensitive(std::size_t n, int rank) {
  std::vector<T> x(n);
  std::uint64_t s = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(rank + 1);
  for (T& v : x) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(s >> 11) / 9007199254740992.0;  // [0, 1)
    v = static_cast<T>((u - 0.5) * std::ldexp(1.0, static_cast<int>(s % 41) - 20));
  }
  return x;
}

// The sum of every rank's x over `comm` in the order of the hierarchical path
// (core/shm_hierarchy.hpp) where nodes are blocks of `node_ranks` consecutive ranks:
// (s_0 + s_1) + ... over the nodes, s_m = (x_a + x_b) + ... over node m's ranks. Inputs
// gathered by MPI's path; node_ranks >= size: the flat rank order.
template <class T>
std::vector<T> node_order_sum(const Comm& comm, const std::vector<T>& x, int node_ranks) {
  const std::size_t n = x.size();
  const int p = comm.size();
  std::vector<T> all(n * p), sum(n), node(n);
  with_shm(false, [&] { comm.all_gather<T>(x, all); });
  for (int first = 0; first < p; first += node_ranks) {
    std::copy(all.begin() + first * n, all.begin() + (first + 1) * n, node.begin());
    for (int j = first + 1; j < std::min(p, first + node_ranks); ++j)
      for (std::size_t i = 0; i < n; ++i) node[i] += all[j * n + i];
    for (std::size_t i = 0; i < n; ++i) sum[i] = first == 0 ? node[i] : sum[i] + node[i];
  }
  return sum;
}

}  // namespace trident::test
