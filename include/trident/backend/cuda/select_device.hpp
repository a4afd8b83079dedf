// trident/backend/cuda/select_device.hpp: which GPU each rank uses, and the collective path
// that follows (backend/collective_path.hpp).
//
// The ranks of a node take its visible GPUs round robin: local rank r uses device
// r % devices. That maps when a node has at most as many ranks as GPUs (one each: NCCL) or a
// multiple of them (each GPU shared by the same number of ranks: host staging); otherwise
// (3 ranks on 2 GPUs) one GPU would carry more ranks than another, and it is an Error.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "../../core/comm.hpp"
#include "../../core/environment.hpp"
#include "../../core/error.hpp"
#include "../collective_path.hpp"
#include "device.hpp"
#include "error.hpp"

namespace trident::backend::cuda {

// The device of local rank `local_rank` of `local_ranks` on a node with `devices` GPUs.
inline int device_of_rank(int local_rank, int local_ranks, int devices) {
  require(devices > 0, "device cuda: no CUDA device is visible");
  require(local_ranks <= devices || local_ranks % devices == 0,
          std::to_string(local_ranks) + " ranks on a node do not map onto its " +
              std::to_string(devices) +
              " GPUs: use at most one rank per GPU or a multiple of the GPU count");
  return local_rank % devices;
}

// Collective over `world`: sets this rank's device and returns it; one Error on every rank
// when a rank sees no GPU or the ranks do not map onto them.
inline int select_device(const Comm& world) {
  const Comm node = node_comm(world);
  const VisibleDevices visible = visible_devices();
  agree(world, visible.count > 0,
        "device cuda: no CUDA device is visible to this process (" + visible.reason + ")");
  std::string message;
  int device = 0;
  try {
    device = device_of_rank(node.rank(), node.size(), visible.count);
  } catch (const Error& e) {
    message = e.what();
  }
  agree(world, message.empty(), message);
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  return device;
}

// Collective over `world`: NCCL when every rank of each node has its own GPU, else host staging.
inline CollectivePath device_collective_path(const Comm& world, int device) {
  return collective_path(world, false, device_uuid(device));
}

}  // namespace trident::backend::cuda
