// trident/backend/collective_path.hpp: how a backend's buffers reach MPI's or NCCL's
// collectives, chosen once per run from where the ranks' buffers live.
//
//   mpi           the backend's memory is host memory (backend::Cpu): MPI reads it directly
//   nccl          every rank of a node has its own GPU: NCCL, device to device
//   host_staging  two ranks of a node share a GPU, which NCCL refuses: each collective copies
//                 device -> host, runs MPI on the host copy, and copies host -> device
// Ranks on the same GPU are found by the device's UUID (device numbers differ under different
// CUDA_VISIBLE_DEVICES). The choice is the same on every rank (one rank sharing forces staging
// everywhere: the groups of a mesh span nodes), and a run names it in its report.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "../core/comm.hpp"

namespace trident::backend {

enum class CollectivePath { mpi, nccl, host_staging };

inline const char* to_string(CollectivePath p) {
  switch (p) {
    case CollectivePath::mpi:
      return "mpi (host memory)";
    case CollectivePath::nccl:
      return "nccl (one GPU per rank)";
    case CollectivePath::host_staging:
      return "host staging (ranks share a GPU: device -> host -> MPI -> host -> device)";
  }
  return "?";
}

// node_device_ids: the device (UUID) of every rank of one node.
inline CollectivePath choose_collective_path(bool host_memory,
                                             std::vector<std::string> node_device_ids) {
  if (host_memory) return CollectivePath::mpi;
  std::sort(node_device_ids.begin(), node_device_ids.end());
  const bool shared =
      std::adjacent_find(node_device_ids.begin(), node_device_ids.end()) != node_device_ids.end();
  return shared ? CollectivePath::host_staging : CollectivePath::nccl;
}

// Collective over `world`: gathers the device ids of this node's ranks (node_comm) and agrees
// on one path for all ranks (staging when any node shares a device). device_id: at most 63
// characters (a UUID in hex is 32).
inline CollectivePath collective_path(const Comm& world, bool host_memory,
                                      const std::string& device_id) {
  if (host_memory) return CollectivePath::mpi;
  constexpr std::size_t kIdChars = 64;
  require(device_id.size() < kIdChars, "collective_path: device id longer than 63 characters");
  const Comm node = node_comm(world);
  std::array<char, kIdChars> mine{};
  std::copy(device_id.begin(), device_id.end(), mine.begin());
  std::vector<char> all(kIdChars * static_cast<std::size_t>(node.size()));
  node.all_gather(Span<const char>(mine.data(), kIdChars), Span<char>(all));
  std::vector<std::string> ids;
  for (int r = 0; r < node.size(); ++r) ids.emplace_back(all.data() + r * kIdChars);
  const bool staging = choose_collective_path(false, ids) == CollectivePath::host_staging;
  return world.all_reduce_value(staging ? 1 : 0, ReduceOp::max) ? CollectivePath::host_staging
                                                                : CollectivePath::nccl;
}

}  // namespace trident::backend
