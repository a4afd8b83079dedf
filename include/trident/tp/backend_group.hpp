// trident/tp/backend_group.hpp: BackendTp<B>, a tensor-parallel group's collectives on buffers in
// backend B's memory — what a layer written against B (models/gpt2/backend_block.hpp) calls for
// Megatron's f (backward) and g (forward) all-reduces (Shoeybi et al. 2019, §3) and for the
// vocab-parallel cross-entropy's row statistics.
//
// At TP = 1 (or without a group) every call is a no-op. Otherwise the calls go through
// DeviceComm<B> (backend/device_comm.hpp): MPI on the pointers for a host-memory backend,
// host staging (device -> host -> MPI -> host -> device) for a device one, so CommStats count
// the bytes the CPU run counts. Sequence parallelism is not supported here.
#pragma once

#include <optional>

#include "../backend/collective_path.hpp"
#include "../backend/device_comm.hpp"
#include "tensor_parallel.hpp"

namespace trident {

template <class B>
class BackendTp {
 public:
  BackendTp() = default;  // TP = 1
  explicit BackendTp(const TensorParallel& tp) : size_(tp.size()), rank_(tp.rank()) {
    require(!tp.sequence_parallel,
            std::string("the ") + B::kName + " backend's layers have no sequence parallelism yet");
    if (size_ > 1)
      comm_.emplace(*tp.comm, B::kHostMemory ? backend::CollectivePath::mpi
                                             : backend::CollectivePath::host_staging);
  }

  int size() const { return size_; }
  int rank() const { return rank_; }

  // x: (n) in place, over the group
  template <class T>
  void all_reduce(T* x, std::size_t n, ReduceOp op = ReduceOp::sum) const {
    if (comm_) comm_->all_reduce(x, n, op);
  }
  // in: (n) -> out: (size * n), the ranks' pieces in order
  template <class T>
  void all_gather(const T* in, T* out, std::size_t n) const {
    if (comm_) return comm_->all_gather(in, out, n);
    B::copy(out, in, n * sizeof(T));
  }

 private:
  int size_ = 1, rank_ = 0;
  std::optional<backend::DeviceComm<B>> comm_;
};

}  // namespace trident
