// trident/train/device_groups.hpp: a run's mesh groups on backend B, with the collective path
// each takes (ARCHITECTURE §4.1).
//
// B::attach(world) gives the device's path (MPI, NCCL or host staging), the same on every rank.
// The pipeline group takes it too, unless the schedule's messages do not suit NCCL's tagless,
// in-order point-to-point (pp/grouped_p2p.hpp): then its messages are staged through the host.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "../core/comm.hpp"
#include "../mesh/device_mesh.hpp"
#include "../pp/grouped_p2p.hpp"

namespace trident {

// The groups of `mesh` for a run of `schedule` (every stage's actions; map: where its chunks
// sit); `pipeline_note` says why the pipeline's messages take host staging, empty otherwise.
// Collective over world.
template <class B>
std::unique_ptr<DeviceMesh<B>> device_groups(const Comm& world, const Mesh<>& mesh,
                                             const std::vector<std::vector<pp::Action>>& schedule,
                                             const pp::ChunkMap& map, std::string& pipeline_note) {
  const backend::CollectivePath path = B::attach(world);
  if (path == backend::CollectivePath::nccl) pipeline_note = pp::grouped_p2p_problem(schedule, map);
  return std::make_unique<DeviceMesh<B>>(
      mesh, path, pipeline_note.empty() ? path : backend::CollectivePath::host_staging);
}

}  // namespace trident
