// trident/core/shm_hierarchy.hpp: the collectives of a group that spans nodes: shared memory
// inside each node, MPI across the nodes' leaders; reductions in a fixed order.
//
// A group spanning nodes splits into its nodes (each node's ranks of the group, in group order)
// and their leaders (each node's first rank; nodes ordered by it). all_reduce runs
//   1. inside each node, the shared-memory all_reduce (shm_collectives.hpp): the node's sum;
//   2. across the leaders, a reduce-scatter then an all-gather of the node sums
//      (MPI_Ialltoallv, MPI_Iallgatherv: data movement only): leader j adds piece j of the k
//      node sums in node order, so every leader holds the same bits;
//   3. inside each node, the shared-memory broadcast from the leader.
// Element i is thus (s_0 + s_1) + ... + s_{k-1} over the nodes in order, s_m being
// ((x_a + x_b) + ...) over node m's ranks in group order: fixed, so bitwise the same from run to
// run and on every rank (not the flat group's order x_0 + x_1 + ... unless one node). Across the
// link each leader sends and receives 2 (k-1)/k of the message, as a ring all-reduce does.
// reduce_scatter reduces a copy of its input so (memory: one input's size), then keeps its shard.
// all_gather: the shared-memory gather of each node's shards to its leader, MPI_Iallgatherv of
// the nodes' blocks across the leaders, the leaders put the shards in group order, the
// shared-memory broadcast inside each node. broadcast: the shared-memory broadcast inside the
// root's node, MPI_Ibcast across the leaders from the root's leader, the shared-memory broadcast
// inside the other nodes. Either way each node's data crosses the link once, from its leader.
//
// Same node: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) (the nodes of cmake/cluster.sh have
// separate IPC namespaces and are found apart). TRIDENT_SHM_NODE_RANKS=k (shm_tuning) pretends
// that each block of k consecutive world ranks is a node of its own, so that one machine runs
// this path (tests/test_comm_nodes.cpp).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <exception>
#include <vector>

#include "datatype.hpp"
#include "shm_collectives.hpp"

namespace trident {

// A group's nodes and leaders; made collectively by node_hierarchy().
class NodeHierarchy {
 public:
  NodeHierarchy(MPI_Comm comm, MPI_Comm node) : node_(node) {
    int group_rank = 0;
    MPI_Comm_rank(comm, &group_rank);
    MPI_Comm_rank(node_, &node_rank_);
    MPI_Comm_size(node_, &node_size_);
    check_mpi(MPI_Comm_split(comm, node_rank_ == 0 ? 0 : MPI_UNDEFINED, group_rank, &leaders_),
              "MPI_Comm_split");
    map_nodes(comm, group_rank);
  }
  // Collective (MPI_Comm_free of both, which frees the node's segment); skipped as
  // SharedSegment's destructor is.
  ~NodeHierarchy() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized || std::uncaught_exceptions() > 0) return;
    if (leaders_ != MPI_COMM_NULL) MPI_Comm_free(&leaders_);
    MPI_Comm_free(&node_);
  }
  NodeHierarchy(const NodeHierarchy&) = delete;
  NodeHierarchy& operator=(const NodeHierarchy&) = delete;

  bool leader() const { return node_rank_ == 0; }
  MPI_Comm leaders() const { return leaders_; }  // MPI_COMM_NULL on the other ranks
  // This node's segment; nullptr when the node holds one rank of the group. Collective over the
  // node on the first call.
  SharedSegment* segment() { return node_size_ > 1 ? shared_segment(node_) : nullptr; }
  int node() const { return node_of_[my_rank_]; }  // this rank's
  // Group rank g's node (its leader's rank among the leaders) and rank in that node.
  int node_of(int g) const { return node_of_[g]; }
  int rank_in_node(int g) const { return rank_in_node_[g]; }
  // The group's ranks node after node (each node's in group order); node m's are
  // order()[node_start(m), node_start(m) + node_size(m)).
  const std::vector<int>& order() const { return order_; }
  int node_start(int m) const { return node_starts_[m]; }
  int node_size(int m) const { return node_sizes_[m]; }

 private:
  // Every rank's node and rank in it, from each rank's leader (the node's smallest group rank:
  // node_ orders its ranks by group rank).
  void map_nodes(MPI_Comm comm, int group_rank) {
    int size = 0;
    MPI_Comm_size(comm, &size);
    my_rank_ = group_rank;
    int leader = group_rank;
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node_, &request),
              "MPI_Iallreduce");
    trident::detail::complete(request, nullptr, Waiting{});
    std::vector<int> leader_of(size), leaders;
    check_mpi(MPI_Iallgather(&leader, 1, MPI_INT, leader_of.data(), 1, MPI_INT, comm, &request),
              "MPI_Iallgather");
    trident::detail::complete(request, nullptr, Waiting{});
    for (int g = 0; g < size; ++g)
      if (leader_of[g] == g) leaders.push_back(g);  // increasing: the leaders' order
    node_of_.resize(size);
    rank_in_node_.resize(size);
    node_sizes_.assign(leaders.size(), 0);
    for (int g = 0; g < size; ++g) {
      node_of_[g] = static_cast<int>(
          std::lower_bound(leaders.begin(), leaders.end(), leader_of[g]) - leaders.begin());
      rank_in_node_[g] = node_sizes_[node_of_[g]]++;
    }
    node_starts_.assign(leaders.size(), 0);
    for (std::size_t m = 1; m < leaders.size(); ++m)
      node_starts_[m] = node_starts_[m - 1] + node_sizes_[m - 1];
    order_.resize(size);
    for (int g = 0; g < size; ++g) order_[node_starts_[node_of_[g]] + rank_in_node_[g]] = g;
  }

  MPI_Comm node_ = MPI_COMM_NULL, leaders_ = MPI_COMM_NULL;
  int node_rank_ = 0, node_size_ = 0, my_rank_ = 0;
  std::vector<int> node_of_, rank_in_node_, order_, node_starts_, node_sizes_;
};

// The hierarchy of `comm`, cached on it; nullptr when its ranks share one node. Collective on
// the first call.
inline NodeHierarchy* node_hierarchy(MPI_Comm comm) {
  return detail::cached_on<NodeHierarchy>(comm, [comm]() -> NodeHierarchy* {
    int size = 0, node_size = 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm node = detail::split_node(comm);
    MPI_Comm_size(node, &node_size);
    if (node_size != size) return new NodeHierarchy(comm, node);
    MPI_Comm_free(&node);
    return nullptr;
  });
}

namespace shm {
namespace detail {

// buf <- op over the leaders of buf, in leader order; see the top of this file.
template <class T>
void across_leaders(MPI_Comm leaders, Span<T> buf, ReduceOp op, const Waiting& what) {
  int k = 0, me = 0;
  MPI_Comm_size(leaders, &k);
  MPI_Comm_rank(leaders, &me);
  if (k < 2) return;
  const std::size_t n = buf.size();
  require(n <= static_cast<std::size_t>(INT_MAX), "message larger than INT_MAX elements");
  std::vector<int> counts(k), starts(k);  // piece j: [n j / k, n (j+1) / k)
  for (int j = 0; j < k; ++j) {
    starts[j] = static_cast<int>(n * j / k);
    counts[j] = static_cast<int>(n * (j + 1) / k) - starts[j];
  }
  const int mine = counts[me];
  std::vector<int> from_counts(k, mine), from_starts(k);  // piece me of every node, in order
  for (int j = 0; j < k; ++j) from_starts[j] = j * mine;
  std::vector<T> pieces(static_cast<std::size_t>(k) * mine);
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(
      MPI_Ialltoallv(buf.data(), counts.data(), starts.data(), mpi_type<T>(), pieces.data(),
                     from_counts.data(), from_starts.data(), mpi_type<T>(), leaders, &request),
      "MPI_Ialltoallv");
  trident::detail::complete(request, nullptr, what);
  T* out = buf.data() + starts[me];
  if (mine > 0) std::memcpy(out, pieces.data(), mine * sizeof(T));  // a node's piece may be empty
  for (int j = 1; j < k; ++j)
    for (int i = 0; i < mine; ++i) out[i] = combine(out[i], pieces[j * mine + i], op);
  check_mpi(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf.data(), counts.data(),
                            starts.data(), mpi_type<T>(), leaders, &request),
            "MPI_Iallgatherv");
  trident::detail::complete(request, nullptr, what);
}

}  // namespace detail

// buf <- op over the group of buf, in place, the group spanning nodes.
template <class T>
void all_reduce(NodeHierarchy& h, Span<T> buf, ReduceOp op, const Waiting& what) {
  SharedSegment* node = h.segment();
  if (node) all_reduce(*node, buf, op, what);
  if (h.leader()) detail::across_leaders(h.leaders(), buf, op, what);
  if (node) broadcast(*node, buf, 0, what);
}

// out <- shard `rank` of the sum of `in`; in: (p * n), out: (n); the group spanning nodes.
template <class T>
void reduce_scatter(NodeHierarchy& h, Span<const T> in, Span<T> out, int rank,
                    const Waiting& what) {
  std::vector<T> sum(in.begin(), in.end());
  all_reduce(h, Span<T>(sum), ReduceOp::sum, what);
  const std::size_t n = out.size();
  std::memcpy(out.data(), sum.data() + rank * n, n * sizeof(T));
}

// out <- the shards `in` of all ranks in group order; in: (n), out: (p * n); the group spanning
// nodes. The leaders gather the nodes' blocks node after node (h.order()), then put each shard
// in its place.
template <class T>
void all_gather(NodeHierarchy& h, Span<const T> in, Span<T> out, const Waiting& what) {
  const std::size_t n = in.size();
  require(out.size() <= static_cast<std::size_t>(INT_MAX), "message larger than INT_MAX elements");
  SharedSegment* node = h.segment();
  std::vector<T> blocks(h.leader() ? out.size() : 0);  // leaders: node after node
  const std::size_t at = h.leader() ? h.node_start(h.node()) * n : 0;
  const Span<T> mine(blocks.data() + at, h.leader() ? h.node_size(h.node()) * n : 0);
  if (node)
    gather(*node, in, mine, 0, what);
  else
    std::memcpy(mine.data(), in.data(), in.bytes());
  if (h.leader()) {
    int k = 0;
    MPI_Comm_size(h.leaders(), &k);
    std::vector<int> counts(k), starts(k);
    for (int m = 0; m < k; ++m) {
      counts[m] = static_cast<int>(h.node_size(m) * n);
      starts[m] = static_cast<int>(h.node_start(m) * n);
    }
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, blocks.data(), counts.data(),
                              starts.data(), mpi_type<T>(), h.leaders(), &request),
              "MPI_Iallgatherv");
    trident::detail::complete(request, nullptr, what);
    for (std::size_t i = 0; i < h.order().size(); ++i)
      std::memcpy(out.data() + h.order()[i] * n, blocks.data() + i * n, n * sizeof(T));
  }
  if (node) broadcast(*node, out, 0, what);
}

// buf <- root's buf; the group spanning nodes.
template <class T>
void broadcast(NodeHierarchy& h, Span<T> buf, int root, const Waiting& what) {
  require(buf.size() <= static_cast<std::size_t>(INT_MAX), "message larger than INT_MAX elements");
  SharedSegment* node = h.segment();
  const int root_node = h.node_of(root);
  const bool root_here = root_node == h.node();
  if (node && root_here) broadcast(*node, buf, h.rank_in_node(root), what);
  if (h.leader()) {
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Ibcast(buf.data(), static_cast<int>(buf.size()), mpi_type<T>(), root_node,
                         h.leaders(), &request),
              "MPI_Ibcast");
    trident::detail::complete(request, nullptr, what);
  }
  if (node && !root_here) broadcast(*node, buf, 0, what);
}

// The two routes in one call: through `node`, the group's segment, when it is on one node; else
// through `nodes`, its hierarchy.
template <class T>
void all_reduce(SharedSegment* node, NodeHierarchy* nodes, Span<T> buf, ReduceOp op,
                const Waiting& what) {
  node ? all_reduce(*node, buf, op, what) : all_reduce(*nodes, buf, op, what);
}
template <class T>
void reduce_scatter(SharedSegment* node, NodeHierarchy* nodes, Span<const T> in, Span<T> out,
                    int rank, const Waiting& what) {
  node ? reduce_scatter(*node, in, out, what) : reduce_scatter(*nodes, in, out, rank, what);
}
template <class T>
void all_gather(SharedSegment* node, NodeHierarchy* nodes, Span<const T> in, Span<T> out,
                const Waiting& what) {
  node ? all_gather(*node, in, out, what) : all_gather(*nodes, in, out, what);
}
template <class T>
void broadcast(SharedSegment* node, NodeHierarchy* nodes, Span<T> buf, int root,
               const Waiting& what) {
  node ? broadcast(*node, buf, root, what) : broadcast(*nodes, buf, root, what);
}

}  // namespace shm
}  // namespace trident
