// trident/backend/device_comm.hpp: DeviceComm<B>, a group's collectives on buffers in backend
// B's memory, along one CollectivePath (collective_path.hpp) chosen for the group:
//
//   mpi           B's memory is host memory (backend::Cpu): the Comm's own calls on the pointers
//                 (its shared-memory paths included)
//   host_staging  device -> host copy, the Comm's call on the host copy, host -> device copy
//                 (ranks sharing a GPU, which NCCL refuses; the emulated device; a CUDA build
//                 without NCCL); nonblocking forms copy back when the request completes
//   nccl          NCCL on B's stream (B::Nccl, backend/cuda/nccl.hpp), the communicator made
//                 from a unique id broadcast over the group; in stream order with the kernels,
//                 so a request is complete for every later kernel when it is returned
// Every path counts the same bytes in CommStats under the group's name (the Comm's call, or
// Comm::counted for NCCL), so the report's traffic against the formulas holds on every device.
// Shapes as Comm's: reduce_scatter in (size * n) -> out (n); all_gather in (n) -> out (size * n);
// all_to_all_v's blocks as core/all_to_all.hpp's.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "../core/comm.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "collective_path.hpp"
#include "device_buffer.hpp"

namespace trident::backend {

// The interface of an NCCL communicator (backend/cuda/nccl.hpp), for backends without NCCL:
// never constructed (DeviceComm refuses the nccl path there), so that every call compiles.
struct NoNccl {
  explicit NoNccl(const Comm&) {}
  template <class T>
  void all_reduce(T*, std::size_t, ReduceOp) {}
  template <class T>
  void reduce_scatter(const T*, T*, std::size_t) {}
  template <class T>
  void all_gather(const T*, T*, std::size_t) {}
  template <class T>
  void broadcast(T*, std::size_t, int) {}
  template <class T>
  void send(const T*, std::size_t, int) {}
  template <class T>
  void recv(T*, std::size_t, int) {}
  void group_start() {}
  void group_end() {}
};

// B::Nccl when the backend has NCCL (the CUDA backend built with it), else NoNccl.
template <class B, class = void>
struct nccl_of {
  using type = NoNccl;
};
template <class B>
struct nccl_of<B, std::void_t<typename B::Nccl>> {
  using type = typename B::Nccl;
};
template <class B>
inline constexpr bool kHasNccl = !std::is_same_v<typename nccl_of<B>::type, NoNccl>;

// A started operation on device buffers: an MPI request and what follows it (host staging's
// copy back). Move-only; the destructor waits, as Request's does. (DeviceComm's functions that
// return one are [[nodiscard]]: dropped, it would be waited for at once.)
class DeviceRequest {
 public:
  DeviceRequest() = default;
  explicit DeviceRequest(Request r, std::function<void()> finish = {})
      : request_(std::move(r)), finish_(std::move(finish)) {}
  DeviceRequest(DeviceRequest&& o) noexcept { static_cast<void>(*this = std::move(o)); }
  DeviceRequest& operator=(DeviceRequest&& o) noexcept {
    if (this != &o) {
      finish_quietly();
      static_cast<void>(request_ = std::move(o.request_));  // (nvcc: Request is [[nodiscard]])
      finish_ = std::exchange(o.finish_, {});
    }
    return *this;
  }
  DeviceRequest(const DeviceRequest&) = delete;
  DeviceRequest& operator=(const DeviceRequest&) = delete;
  ~DeviceRequest() { finish_quietly(); }

  bool active() const { return request_.active() || finish_; }
  void wait() {
    request_.wait();
    done();
  }
  [[nodiscard]] bool test() {
    if (!request_.test()) return false;
    done();
    return true;
  }

 private:
  void done() {
    if (finish_) std::exchange(finish_, {})();
  }
  void finish_quietly() noexcept {
    try {
      wait();
    } catch (...) {
    }
  }
  Request request_;
  std::function<void()> finish_;
};

template <class B>
class DeviceComm {
  using Nccl = typename nccl_of<B>::type;

 public:
  DeviceComm() = default;  // no group: every call is the identity of a group of one
  // The path B's memory takes without NCCL: MPI on host memory, else host staging.
  static CollectivePath staged_path() {
    return B::kHostMemory ? CollectivePath::mpi : CollectivePath::host_staging;
  }
  // Collective over `comm` when the path is nccl (the communicator is made then).
  DeviceComm(const Comm& comm, CollectivePath path) : comm_(&comm), path_(path) {
    require(path != CollectivePath::mpi || B::kHostMemory, "collectives on '" + comm.name() +
                                                               "': MPI cannot read " + B::kName +
                                                               " memory; use host staging");
    if (path == CollectivePath::nccl) {
      if constexpr (kHasNccl<B>)
        nccl_ = std::make_shared<Nccl>(comm);
      else
        fail("collectives on '" + comm.name() + "': the nccl path needs the CUDA backend built " +
             "with NCCL; the " + B::kName + " backend takes " + to_string(staged_path()));
    }
  }

  bool valid() const { return comm_ != nullptr; }
  const Comm& comm() const { return *comm_; }
  CollectivePath path() const { return path_; }
  int size() const { return comm_ ? comm_->size() : 1; }
  int rank() const { return comm_ ? comm_->rank() : 0; }

  // --- blocking -------------------------------------------------------------------------
  // data: (n) in place
  template <class T>
  void all_reduce(T* data, std::size_t n, ReduceOp op = ReduceOp::sum) const {
    if (size() < 2) return;
    if (direct()) return comm_->all_reduce(Span<T>(data, n), op);
    if (nccl(CommOp::all_reduce, n * sizeof(T), [&] { nccl_->all_reduce(data, n, op); })) return;
    Buffer<T> host = staged(data, n);
    comm_->all_reduce(Span<T>(host.data(), n), op);
    B::to_device(data, host.data(), n * sizeof(T));
  }
  template <class T>
  void reduce_scatter(const T* in, T* out, std::size_t n) const {
    if (size() < 2) return B::copy(out, in, n * sizeof(T));
    const std::size_t full = n * std::size_t(size());
    if (direct()) return comm_->reduce_scatter(Span<const T>(in, full), Span<T>(out, n));
    if (nccl(CommOp::reduce_scatter, full * sizeof(T), [&] { nccl_->reduce_scatter(in, out, n); }))
      return;
    Buffer<T> host_in = staged(in, full), host_out(MemoryKind::buffers, n, Fill::none);
    comm_->reduce_scatter(Span<const T>(host_in.data(), full), Span<T>(host_out.data(), n));
    B::to_device(out, host_out.data(), n * sizeof(T));
  }
  template <class T>
  void all_gather(const T* in, T* out, std::size_t n) const {
    if (size() < 2) return B::copy(out, in, n * sizeof(T));
    const std::size_t full = n * std::size_t(size());
    if (direct()) return comm_->all_gather(Span<const T>(in, n), Span<T>(out, full));
    if (nccl(CommOp::all_gather, full * sizeof(T), [&] { nccl_->all_gather(in, out, n); })) return;
    Buffer<T> host_in = staged(in, n), host_out(MemoryKind::buffers, full, Fill::none);
    comm_->all_gather(Span<const T>(host_in.data(), n), Span<T>(host_out.data(), full));
    B::to_device(out, host_out.data(), full * sizeof(T));
  }
  // buf: (size * n), this rank's shard in place at [rank n, (rank + 1) n)
  template <class T>
  void all_gather_in_place(T* buf, std::size_t full) const {
    if (size() < 2) return;
    if (direct()) return comm_->all_gather_in_place(Span<T>(buf, full));
    const std::size_t n = full / std::size_t(size());
    if (nccl(CommOp::all_gather, full * sizeof(T),
             [&] { nccl_->all_gather(buf + std::size_t(rank()) * n, buf, n); }))
      return;
    Buffer<T> host = staged(buf, full);
    comm_->all_gather_in_place(Span<T>(host.data(), full));
    B::to_device(buf, host.data(), full * sizeof(T));
  }
  template <class T>
  void broadcast(T* data, std::size_t n, int root) const {
    if (size() < 2) return;
    if (direct()) return comm_->broadcast(Span<T>(data, n), root);
    if (nccl(
            CommOp::broadcast, n * sizeof(T), [&] { nccl_->broadcast(data, n, root); }, root))
      return;
    Buffer<T> host = staged(data, n);
    comm_->broadcast(Span<T>(host.data(), n), root);
    B::to_device(data, host.data(), n * sizeof(T));
  }
  // recv's block j (recv_counts[j] elements) <- rank j's block for this rank; blocks consecutive
  // in rank order (core/all_to_all.hpp). NCCL has no all-to-all-v: one group of ncclSend and
  // ncclRecv per peer with a block (as nccl-tests' alltoall), the own block copied on the device;
  // there the counts must agree across ranks unchecked (Comm's shared-memory path checks them).
  template <class T>
  void all_to_all_v(const T* send, const AllToAllCounts& send_counts, T* recv,
                    const AllToAllCounts& recv_counts) const {
    const std::string name = comm_ ? comm_->name() : "no group";
    const a2a::Layout l = a2a::layout(name, size(), rank(), kAny, send_counts, kAny, recv_counts);
    const int me = rank();
    const std::size_t own = l.own * sizeof(T);
    if (size() < 2) return B::copy(recv + l.recv.start[me], send + l.send.start[me], own);
    const Span<const T> in(send, l.send.total);
    const Span<T> out(recv, l.recv.total);
    if (direct()) return comm_->all_to_all_v(in, send_counts, out, recv_counts);
    if (path_ == CollectivePath::nccl) return nccl_all_to_all_v(in, l, out);
    Buffer<T> host_in = staged(send, l.send.total);
    Buffer<T> host_out(MemoryKind::buffers, l.recv.total, Fill::none);
    comm_->all_to_all_v(Span<const T>(host_in.data(), in.size()), send_counts,
                        Span<T>(host_out.data(), out.size()), recv_counts);
    B::to_device(recv, host_out.data(), out.bytes());
  }
  // theirs: (n) <- peer's `mine`; both ranks call it with each other as peer. (NCCL: one
  // grouped send and receive; MPI: a posted receive, then the send.)
  template <class T>
  void exchange(const T* mine, T* theirs, std::size_t n, int peer, int tag) const {
    if (path_ == CollectivePath::nccl) {
      if constexpr (kHasNccl<B>) {
        comm_->counted(CommOp::recv, n * sizeof(T), peer, [&](const Waiting&) {
          comm_->counted(CommOp::send, n * sizeof(T), peer, [&](const Waiting&) {
            nccl_->group_start();  // one group: neither blocks the other
            nccl_->send(mine, n, peer);
            nccl_->recv(theirs, n, peer);
            nccl_->group_end();
          });
        });
        return;
      }
    }
    DeviceRequest r = irecv(theirs, n, peer, tag);
    isend(mine, n, peer, tag).wait();
    r.wait();
  }

  // --- nonblocking (MPI and host staging; NCCL runs in stream order and returns done) ------
  template <class T>
  [[nodiscard]] DeviceRequest iall_reduce(T* data, std::size_t n) const {
    if (size() < 2) return DeviceRequest();
    if (direct()) return DeviceRequest(comm_->iall_reduce(Span<T>(data, n)));
    if (path_ == CollectivePath::nccl) return all_reduce(data, n), DeviceRequest();
    auto host = share(staged(data, n));
    return DeviceRequest(comm_->iall_reduce(Span<T>(host->data(), n)),
                         [=] { B::to_device(data, host->data(), n * sizeof(T)); });
  }
  // buf: (size * n) in; the reduced shard of this rank lands in buf[0, n).
  template <class T>
  [[nodiscard]] DeviceRequest ireduce_scatter_in_place(T* buf, std::size_t full) const {
    if (size() < 2) return DeviceRequest();
    if (direct()) return DeviceRequest(comm_->ireduce_scatter_in_place(Span<T>(buf, full)));
    const std::size_t n = full / std::size_t(size());
    if (path_ == CollectivePath::nccl) {
      DeviceBuffer<T, B> shard(MemoryKind::buffers, n, Fill::none);
      reduce_scatter(buf, shard.data(), n);
      B::copy(buf, shard.data(), n * sizeof(T));
      return DeviceRequest();
    }
    auto host = share(staged(buf, full));
    return DeviceRequest(comm_->ireduce_scatter_in_place(Span<T>(host->data(), full)),
                         [=] { B::to_device(buf, host->data(), n * sizeof(T)); });
  }
  template <class T>
  [[nodiscard]] DeviceRequest iall_gather(const T* in, T* out, std::size_t n) const {
    if (size() < 2) return B::copy(out, in, n * sizeof(T)), DeviceRequest();
    if (direct()) {
      const std::size_t full = n * std::size_t(size());
      return DeviceRequest(comm_->iall_gather(Span<const T>(in, n), Span<T>(out, full)));
    }
    if (path_ == CollectivePath::nccl) return all_gather(in, out, n), DeviceRequest();
    const std::size_t full = n * std::size_t(size());
    auto host_in = share(staged(in, n));
    auto host_out = share(Buffer<T>(MemoryKind::buffers, full, Fill::none));
    Request r =
        comm_->iall_gather(Span<const T>(host_in->data(), n), Span<T>(host_out->data(), full));
    r.keep_alive(host_in);
    return DeviceRequest(std::move(r),
                         [=] { B::to_device(out, host_out->data(), full * sizeof(T)); });
  }
  template <class T>
  [[nodiscard]] DeviceRequest iall_gather_in_place(T* buf, std::size_t full) const {
    if (size() < 2) return DeviceRequest();
    if (direct()) return DeviceRequest(comm_->iall_gather_in_place(Span<T>(buf, full)));
    if (path_ == CollectivePath::nccl) return all_gather_in_place(buf, full), DeviceRequest();
    auto host = share(staged(buf, full));
    return DeviceRequest(comm_->iall_gather_in_place(Span<T>(host->data(), full)),
                         [=] { B::to_device(buf, host->data(), full * sizeof(T)); });
  }
  // Point-to-point, tagged (MPI and host staging only: NCCL's point-to-point is matched in
  // order, without tags, and grouped: pp/executor.hpp drives it through nccl_send/nccl_recv).
  template <class T>
  [[nodiscard]] DeviceRequest isend(const T* data, std::size_t n, int dest, int tag) const {
    require_tagged();
    if (direct()) return DeviceRequest(comm_->isend(Span<const T>(data, n), dest, tag));
    auto host = share(staged(data, n));
    Request r = comm_->isend(Span<const T>(host->data(), n), dest, tag);
    r.keep_alive(host);
    return DeviceRequest(std::move(r));
  }
  template <class T>
  [[nodiscard]] DeviceRequest irecv(T* data, std::size_t n, int source, int tag) const {
    require_tagged();
    if (direct()) return DeviceRequest(comm_->irecv(Span<T>(data, n), source, tag));
    auto host = share(Buffer<T>(MemoryKind::buffers, n, Fill::none));
    return DeviceRequest(comm_->irecv(Span<T>(host->data(), n), source, tag),
                         [=] { B::to_device(data, host->data(), n * sizeof(T)); });
  }

  // NCCL's grouped point-to-point (path nccl): between group_start() and group_end() the sends
  // and receives are posted and then progress together; each pair of ranks matches its
  // messages in the order they were posted.
  void group_start() const {
    if constexpr (kHasNccl<B>) nccl_->group_start();
  }
  void group_end() const {
    if constexpr (kHasNccl<B>) nccl_->group_end();
  }
  template <class T>
  void nccl_send(const T* data, std::size_t n, int peer) const {
    if constexpr (kHasNccl<B>)
      comm_->counted(CommOp::send, n * sizeof(T), peer,
                     [&](const Waiting&) { nccl_->send(data, n, peer); });
  }
  template <class T>
  void nccl_recv(T* data, std::size_t n, int peer) const {
    if constexpr (kHasNccl<B>)
      comm_->counted(CommOp::recv, n * sizeof(T), peer,
                     [&](const Waiting&) { nccl_->recv(data, n, peer); });
  }

 private:
  bool direct() const { return path_ == CollectivePath::mpi; }
  void require_tagged() const {
    require(path_ != CollectivePath::nccl,
            "tagged point-to-point on '" + comm_->name() +
                "': the nccl path matches messages in order (DeviceComm::nccl_send, nccl_recv)");
  }
  // Runs an NCCL collective, counted as the group's `op` of `bytes`; false on other paths.
  template <class Run>
  bool nccl(CommOp op, std::size_t bytes, Run&& run, int root = -1) const {
    if (path_ != CollectivePath::nccl) return false;
    if constexpr (kHasNccl<B>) comm_->counted(op, bytes, root, [&](const Waiting&) { run(); });
    return true;
  }
  static constexpr std::size_t kAny = ~std::size_t(0);  // a buffer's size, unknown: any count
  template <class T>
  void nccl_all_to_all_v(Span<const T> in, const a2a::Layout& l, Span<T> out) const {
    if constexpr (kHasNccl<B>) {
      const int me = rank();
      B::copy(out.data() + l.recv.start[me], in.data() + l.send.start[me], l.own * sizeof(T));
      auto run = [&](const Waiting&) {
        nccl_->group_start();  // every peer's send and receive progress together
        for (int j = 0; j < size(); ++j) {
          if (j == me) continue;
          if (l.send.count[j] > 0) nccl_->send(in.data() + l.send.start[j], l.send.count[j], j);
          if (l.recv.count[j] > 0) nccl_->recv(out.data() + l.recv.start[j], l.recv.count[j], j);
        }
        nccl_->group_end();
      };
      comm_->counted(CommOp::all_to_all, in.bytes(), -1, run, l.own * sizeof(T));
    }
  }
  // A host copy of n elements of device memory (waits for the device's work on them).
  template <class T>
  static Buffer<T> staged(const T* data, std::size_t n) {
    Buffer<T> host(MemoryKind::buffers, n, Fill::none);
    B::to_host(host.data(), data, n * sizeof(T));
    return host;
  }
  template <class T>
  static std::shared_ptr<Buffer<T>> share(Buffer<T> b) {
    return std::make_shared<Buffer<T>>(std::move(b));
  }

  const Comm* comm_ = nullptr;
  CollectivePath path_ = CollectivePath::mpi;
  std::shared_ptr<Nccl> nccl_;  // path nccl only
};

}  // namespace trident::backend
