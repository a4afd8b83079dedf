// trident/backend/emulated/mpi_nccl.hpp: NCCL's semantics over MPI, the emulated device's `nccl`
// path (TRIDENT_EMULATED_COLLECTIVES=nccl), so that what a multi-GPU run does with NCCL runs in
// the CPU tests: the interface of backend/cuda/nccl.hpp's NcclComm with NCCL's rules.
//
//  - Point-to-point messages carry no tag: on a communicator of its own (a duplicate of the
//    group's), with one tag, MPI matches each pair's messages in the order they were posted, as
//    NCCL does; a schedule that sends in another order than its receiver receives gets the wrong
//    data, here as on GPUs.
//  - A send completes only when its receive is posted (MPI_Issend: NCCL's rendezvous), and the
//    sends and receives posted between group_start() and group_end() progress together and
//    are all complete when group_end() returns (a GPU's stream waits there for them). Groups
//    that wait for each other hang here as they would on GPUs; the wait has the watchdog's
//    deadline.
//  - Collectives run in call order; the data is staged through the host (device memory is the
//    guarded region) and moved by MPI.
// Nothing here is counted in CommStats: DeviceComm counts each call under the group's name, as
// for NCCL.
#pragma once

#include <mpi.h>

#include <climits>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../../core/comm.hpp"
#include "../../core/datatype.hpp"
#include "../../core/message_tags.hpp"
#include "../../core/request.hpp"

namespace trident::backend::emulated {

// Copy is the device's host <-> device copies (B::to_host, B::to_device).
template <class Copy>
class MpiNccl {
 public:
  // Collective over `group`.
  explicit MpiNccl(const Comm& group) : name_("nccl:" + group.name()), rank_(group.rank()) {
    check_mpi(MPI_Comm_dup(group.get(), &comm_), "MPI_Comm_dup");
  }
  MpiNccl(const MpiNccl&) = delete;
  MpiNccl& operator=(const MpiNccl&) = delete;
  ~MpiNccl() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  template <class T>
  void all_reduce(T* data, std::size_t n, ReduceOp op) {
    std::vector<T> host = staged(data, n);
    run([&](MPI_Request* r) {
      return MPI_Iallreduce(MPI_IN_PLACE, host.data(), int(n), mpi_type<T>(), mpi_op<T>(op), comm_,
                            r);
    });
    Copy::to_device(data, host.data(), n * sizeof(T));
  }
  template <class T>
  void reduce_scatter(const T* in, T* out, std::size_t n) {
    std::vector<T> host = staged(in, n * size()), mine(n);
    run([&](MPI_Request* r) {
      return MPI_Ireduce_scatter_block(host.data(), mine.data(), int(n), mpi_type<T>(),
                                       mpi_op<T>(ReduceOp::sum), comm_, r);
    });
    Copy::to_device(out, mine.data(), n * sizeof(T));
  }
  template <class T>
  void all_gather(const T* in, T* out, std::size_t n) {
    std::vector<T> mine = staged(in, n), all(n * size());
    run([&](MPI_Request* r) {
      return MPI_Iallgather(mine.data(), int(n), mpi_type<T>(), all.data(), int(n), mpi_type<T>(),
                            comm_, r);
    });
    Copy::to_device(out, all.data(), all.size() * sizeof(T));
  }
  template <class T>
  void broadcast(T* data, std::size_t n, int root) {
    std::vector<T> host = staged(data, n);
    run([&](MPI_Request* r) {
      return MPI_Ibcast(host.data(), int(n), mpi_type<T>(), root, comm_, r);
    });
    Copy::to_device(data, host.data(), n * sizeof(T));
  }

  void group_start() { ++depth_; }
  void group_end() {
    if (--depth_ > 0) return;
    for (Posted& p : posted_) complete(p.request);  // all of the group's, together
    for (Posted& p : posted_)
      if (p.done) p.done();
    posted_.clear();
  }
  template <class T>
  void send(const T* data, std::size_t n, int peer) {
    auto host = std::make_shared<std::vector<T>>(staged(data, n));
    post(
        [&](MPI_Request* r) {
          return MPI_Issend(host->data(), count(n), mpi_type<T>(), peer,
                            message_tags::kEmulatedNccl, comm_, r);
        },
        [host] {});
  }
  template <class T>
  void recv(T* data, std::size_t n, int peer) {
    auto host = std::make_shared<std::vector<T>>(n);
    post(
        [&](MPI_Request* r) {
          return MPI_Irecv(host->data(), count(n), mpi_type<T>(), peer, message_tags::kEmulatedNccl,
                           comm_, r);
        },
        [host, data, n] { Copy::to_device(data, host->data(), n * sizeof(T)); });
  }

 private:
  struct Posted {
    MPI_Request request;
    std::function<void()> done;  // after completion (keeps the host buffer alive)
  };
  // n as MPI's int count; an Error past INT_MAX (NCCL's counts are size_t: a message that big
  // runs on GPUs, not in this emulation).
  int count(std::size_t n) const {
    require(n <= static_cast<std::size_t>(INT_MAX),
            name_ + ": a message of " + std::to_string(n) + " elements, past INT_MAX");
    return static_cast<int>(n);
  }
  int size() const {
    int n = 1;
    MPI_Comm_size(comm_, &n);
    return n;
  }
  template <class T>
  static std::vector<T> staged(const T* device, std::size_t n) {
    std::vector<T> host(n);
    Copy::to_host(host.data(), device, n * sizeof(T));
    return host;
  }
  // Completes one request under trident's waiting policy (test + yield, the watchdog's deadline).
  void complete(MPI_Request& r) const { trident::detail::complete(r, nullptr, Waiting{}); }
  template <class Start>
  void run(Start&& start) {
    MPI_Request r = MPI_REQUEST_NULL;
    check_mpi(start(&r), name_.c_str());
    complete(r);
  }
  // A point-to-point call: in the open group, or a group of its own.
  template <class Start>
  void post(Start&& start, std::function<void()> done) {
    group_start();
    MPI_Request r = MPI_REQUEST_NULL;
    check_mpi(start(&r), name_.c_str());
    posted_.push_back({r, std::move(done)});
    group_end();
  }

  std::string name_;
  int rank_ = 0;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int depth_ = 0;
  std::vector<Posted> posted_;
};

}  // namespace trident::backend::emulated
