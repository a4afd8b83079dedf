// trident/mesh/topology.hpp: where the ranks of a mesh sit on nodes.
#pragma once

#include <string>

#include "../core/comm.hpp"
#include "mesh.hpp"

namespace trident {

struct Topology {
  int nodes = 1;                // distinct shared-memory nodes in the world
  int ranks_per_node = 1;       // ranks on this rank's node
  bool tp_spans_nodes = false;  // some tensor-parallel group has ranks on two nodes
};

// Collective over the mesh's world. A node is named by the lowest world rank on it.
inline Topology topology(const Mesh<>& mesh) {
  const Comm& world = mesh.world();
  const Comm node = node_comm(world);
  const int node_id = node.rank() == 0 ? world.rank() : 0;
  const int my_node = node.all_reduce_value(node_id, ReduceOp::max);
  Topology t;
  t.ranks_per_node = node.size();
  t.nodes = world.all_reduce_value(node.rank() == 0 ? 1 : 0);
  const int lo = mesh.tp().all_reduce_value(my_node, ReduceOp::min);
  const int hi = mesh.tp().all_reduce_value(my_node, ReduceOp::max);
  t.tp_spans_nodes = world.all_reduce_value(lo != hi ? 1 : 0, ReduceOp::max) != 0;
  return t;
}

// Rank 0 warns on stderr when a tensor-parallel group crosses nodes (TP's all-reduces belong
// on the fast links inside a node). Collective.
inline Topology warn_if_tp_spans_nodes(const Mesh<>& mesh) {
  const Topology t = topology(mesh);
  if (t.tp_spans_nodes && mesh.rank() == 0)
    std::fprintf(stderr,
                 "warning: a tensor-parallel group (TP=%d) spans nodes (%d ranks per node); "
                 "TP all-reduces will cross the slow inter-node links\n",
                 mesh.shape().tp, t.ranks_per_node);
  return t;
}

}  // namespace trident
