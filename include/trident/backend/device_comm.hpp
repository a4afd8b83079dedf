// trident/backend/device_comm.hpp: DeviceComm<B>, a Comm's collectives on buffers in backend
// B's memory, along the run's CollectivePath (collective_path.hpp).
//
// mpi: the Comm's own call on the pointers. host_staging: the buffer is copied to a host
// Buffer (counted as communication buffers), the Comm's call runs on it, and the result is
// copied back, so the Comm's CommStats count exactly the bytes the CPU run counts. nccl: not
// implemented yet (refused with an Error naming what exists). Same calls and shapes as Comm's.
#pragma once

#include <cstddef>

#include "../core/comm.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "collective_path.hpp"

namespace trident::backend {

template <class B>
class DeviceComm {
 public:
  DeviceComm(const Comm& comm, CollectivePath path) : comm_(comm), path_(path) {
    require(path != CollectivePath::nccl,
            "collectives on '" + comm.name() +
                "': the NCCL path is not implemented yet; ranks on their own GPUs need host "
                "staging (CollectivePath::host_staging) for now");
    require(path != CollectivePath::mpi || B::kHostMemory,
            std::string("collectives on '") + comm.name() + "': MPI cannot read " + B::kName +
                " memory; use host staging");
  }
  const Comm& comm() const { return comm_; }
  CollectivePath path() const { return path_; }

  // data: (n) in place
  template <class T>
  void all_reduce(T* data, std::size_t n, ReduceOp op = ReduceOp::sum) const {
    if (direct()) return comm_.all_reduce(Span<T>(data, n), op);
    Buffer<T> host = staged(data, n);
    comm_.all_reduce(Span<T>(host.data(), n), op);
    B::to_device(data, host.data(), n * sizeof(T));
  }
  // in: (group size * n) -> out: (n), this rank's shard of the sum
  template <class T>
  void reduce_scatter(const T* in, T* out, std::size_t n) const {
    const std::size_t full = n * static_cast<std::size_t>(comm_.size());
    if (direct()) return comm_.reduce_scatter(Span<const T>(in, full), Span<T>(out, n));
    Buffer<T> host_in = staged(in, full);
    Buffer<T> host_out(MemoryKind::buffers, n, Fill::none);
    comm_.reduce_scatter(Span<const T>(host_in.data(), full), Span<T>(host_out.data(), n));
    B::to_device(out, host_out.data(), n * sizeof(T));
  }
  // in: (n) -> out: (group size * n), the shards in rank order
  template <class T>
  void all_gather(const T* in, T* out, std::size_t n) const {
    const std::size_t full = n * static_cast<std::size_t>(comm_.size());
    if (direct()) return comm_.all_gather(Span<const T>(in, n), Span<T>(out, full));
    Buffer<T> host_in = staged(in, n);
    Buffer<T> host_out(MemoryKind::buffers, full, Fill::none);
    comm_.all_gather(Span<const T>(host_in.data(), n), Span<T>(host_out.data(), full));
    B::to_device(out, host_out.data(), full * sizeof(T));
  }
  template <class T>
  void broadcast(T* data, std::size_t n, int root) const {
    if (direct()) return comm_.broadcast(Span<T>(data, n), root);
    Buffer<T> host = staged(data, n);
    comm_.broadcast(Span<T>(host.data(), n), root);
    B::to_device(data, host.data(), n * sizeof(T));
  }
  template <class T>
  void send(const T* data, std::size_t n, int dest, int tag) const {
    if (direct()) return comm_.send(Span<const T>(data, n), dest, tag);
    Buffer<T> host = staged(data, n);
    comm_.send(Span<const T>(host.data(), n), dest, tag);
  }
  template <class T>
  void recv(T* data, std::size_t n, int source, int tag) const {
    if (direct()) return comm_.recv(Span<T>(data, n), source, tag);
    Buffer<T> host(MemoryKind::buffers, n, Fill::none);
    comm_.recv(Span<T>(host.data(), n), source, tag);
    B::to_device(data, host.data(), n * sizeof(T));
  }

 private:
  bool direct() const { return path_ == CollectivePath::mpi; }
  // A host copy of n elements of device memory (waits for the device's work on them).
  template <class T>
  static Buffer<T> staged(const T* data, std::size_t n) {
    Buffer<T> host(MemoryKind::buffers, n, Fill::none);
    B::to_host(host.data(), data, n * sizeof(T));
    return host;
  }

  const Comm& comm_;
  CollectivePath path_;
};

}  // namespace trident::backend
