// The hierarchical shared-memory path (core/shm_hierarchy.hpp) of a group that spans nodes, on
// one machine: shm_tuning().node_ranks = k makes each block of k ranks a node of its own.
// Checked bitwise against the sum in node order, exactly against MPI's path on integer-valued
// data, and that the node order is not the flat rank order (so the bitwise check can tell);
// all_gather and broadcast bitwise against MPI's path, with nodes whose ranks are consecutive in
// the group and nodes whose ranks are not.
#include <algorithm>
#include <cstring>
#include <vector>

#include "mpi_test.hpp"
#include "shm_testing.hpp"

using namespace trident;

namespace {

// A duplicate of `comm` (a fresh segment and hierarchy) whose nodes are blocks of k ranks.
Comm split_into_nodes(const Comm& comm, int k) {
  const ShmTuning saved = shm_tuning();
  shm_tuning().node_ranks = k;
  Comm nodes = comm.dup("nodes");
  (void)shared_segment(nodes.get());  // both decided now, with blocks of k: none, and
  (void)node_hierarchy(nodes.get());  // the hierarchy
  shm_tuning() = saved;
  return nodes;
}

// all_reduce and reduce_scatter (sum) by the hierarchical path, twice, bitwise the node-order
// sum; the chunk sets the node segments' buffer (small: many rounds).
template <class T>
void check_node_order(const Comm& comm, int k, std::size_t chunk) {
  const int p = comm.size();
  const std::size_t n = 3001 * static_cast<std::size_t>(p);
  const std::vector<T> x = test::order_sensitive<T>(n, comm.rank());
  const std::vector<T> expected = test::node_order_sum(comm, x, k);
  for (int run = 0; run < 2; ++run) {
    std::vector<T> reduced = x, shard(n / p);
    test::with_shm(
        true,
        [&] {
          comm.all_reduce(Span<T>(reduced));
          comm.reduce_scatter<T>(x, shard);
        },
        chunk);
    CHECK(std::memcmp(reduced.data(), expected.data(), n * sizeof(T)) == 0);
    CHECK(std::memcmp(shard.data(), expected.data() + comm.rank() * (n / p),
                      shard.size() * sizeof(T)) == 0);
  }
}

// all_gather and broadcast (from every root) by the hierarchical path, bitwise MPI's path, on
// inputs that differ on every rank; the chunk sets the node segments' buffer.
void check_gather_broadcast(const Comm& comm, std::size_t n, std::size_t chunk) {
  const int p = comm.size();
  const std::vector<double> x = test::order_sensitive<double>(n, comm.rank());
  std::vector<double> shm(n * p), mpi(n * p);
  test::with_shm(
      true, [&] { comm.all_gather<double>(x, shm); }, chunk);
  test::with_shm(false, [&] { comm.all_gather<double>(x, mpi); });
  CHECK_MESSAGE(std::memcmp(shm.data(), mpi.data(), shm.size() * sizeof(double)) == 0,
                "all_gather, n = " << n);
  for (int root = 0; root < p; ++root) {
    std::vector<double> from_shm = x, from_mpi = x;
    test::with_shm(
        true, [&] { comm.broadcast(Span<double>(from_shm), root); }, chunk);
    test::with_shm(false, [&] { comm.broadcast(Span<double>(from_mpi), root); });
    CHECK_MESSAGE(std::memcmp(from_shm.data(), from_mpi.data(), n * sizeof(double)) == 0,
                  "broadcast from " << root << ", n = " << n);
  }
}

}  // namespace

TEST_CASE("hierarchical all_gather and broadcast equal MPI's bitwise, nodes in order or not") {
  TRIDENT_RANKS(std::max(2, test::world().size()), base);  // every rank, at least 2
  const int p = base.size(), r = base.rank();
  // evens then odds: a pretend node of world ranks {2i, 2i+1} holds group ranks i and p/2 + i
  const Comm interleaved = base.split(0, (r % 2) * p + r / 2, "interleaved");
  for (const Comm* group : {&base, &interleaved}) {
    for (int k : {1, 2, 3, 4}) {
      if (k >= p || (k == 4 && p != 8)) continue;     // one node; 4: two nodes of 8 ranks
      if (group == &interleaved && k != 2) continue;  // pairs of world ranks: apart in the group
      const Comm comm = split_into_nodes(*group, k);
      REQUIRE(node_hierarchy(comm.get()) != nullptr);  // the path under test is taken
      for (std::size_t n : {1, 13, 4099}) check_gather_broadcast(comm, n, 1 << 18);
      check_gather_broadcast(comm, 1001, 64 * p);  // many rounds
    }
  }
}

TEST_CASE("a group over pretend nodes of 1, 2 and 3 ranks: hierarchical, bitwise in node order") {
  TRIDENT_RANKS(std::max(2, test::world().size()), base);  // every rank, at least 2
  const int p = base.size();
  for (int k : {1, 2, 3}) {
    if (k >= p) continue;  // one node
    const Comm comm = split_into_nodes(base, k);
    CHECK(node_hierarchy(comm.get()) != nullptr);  // the path under test is taken
    CHECK(shared_segment(comm.get()) == nullptr);
    for (std::size_t chunk : {std::size_t(1) << 18, std::size_t(64) * p}) {
      check_node_order<double>(comm, k, chunk);
      check_node_order<float>(comm, k, chunk);
    }
  }
  if (p >= 4) {  // the node order differs from the flat order, so the checks above can tell
    const std::vector<double> x = test::order_sensitive<double>(4096, base.rank());
    CHECK(test::node_order_sum(base, x, 2) != test::node_order_sum(base, x, p));
  }
}

TEST_CASE("hierarchical all_reduce and reduce_scatter equal MPI's exactly, odd sizes, all ops") {
  TRIDENT_RANKS(std::max(2, test::world().size()), base);  // every rank, at least 2
  const int p = base.size(), r = base.rank();
  const Comm comm = split_into_nodes(base, p > 2 ? 2 : 1);
  for (std::size_t n : {1, 13, 1001, 4099}) {
    std::vector<std::int32_t> x(n * p);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int32_t>((r + 1) * (i % 7));
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
      std::vector<std::int32_t> shm(x.begin(), x.begin() + n), mpi = shm;
      test::with_shm(true, [&] { comm.all_reduce(Span<std::int32_t>(shm), op); });
      test::with_shm(false, [&] { comm.all_reduce(Span<std::int32_t>(mpi), op); });
      CHECK_MESSAGE(shm == mpi, "all_reduce, n = " << n);
    }
    std::vector<double> xd(x.begin(), x.end()), shard_shm(n), shard_mpi(n);
    test::with_shm(true, [&] { comm.reduce_scatter<double>(xd, shard_shm); });
    test::with_shm(false, [&] { comm.reduce_scatter<double>(xd, shard_mpi); });
    CHECK_MESSAGE(shard_shm == shard_mpi, "reduce_scatter, n = " << n);
  }
}
