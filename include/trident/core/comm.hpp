// trident/core/comm.hpp: Comm, an MPI communicator with a name and typed collectives.
//
// RAII over MPI_Comm, explicit about ownership: Comm::world() and Comm::borrow() never free the
// handle; split() and dup() return owning communicators that free it on destruction. Every
// operation is started nonblocking and completed by the wait policy of request.hpp, is
// counted in comm_stats() under the communicator's name (see stats.hpp for the convention) and
// is recorded by the flight recorder (flight_recorder.hpp) for the watchdog's report. The fault
// skip-collective (fault.hpp) makes this rank skip one collective: it is recorded, not posted.
// The blocking all_reduce and reduce_scatter of a group on one node take the shared-memory path
// (shm_collectives.hpp: fixed reduction order, bitwise reproducible) from shm_tuning().min_bytes
// up, hierarchically when the group spans nodes (shm_hierarchy.hpp); so do all_gather and
// broadcast when the group is on one node and has more ranks than cores. Smaller messages and
// the nonblocking forms stay on MPI's collectives. Both
// paths count the same bytes. (Measured, bench_comm: at 2 ranks on 2 cores MPI's all_gather and
// broadcast move a peer's data in one copy and the shared-memory path's two copies lose,
// 0.3-0.8x from 16 KiB to 4 MiB; at 8 ranks on 2 cores the shared-memory path wins 1.4-5x.)
#pragma once

#include <mpi.h>

#include <cstdio>
#include <limits>
#include <string>
#include <utility>

#include "datatype.hpp"
#include "error.hpp"
#include "fault.hpp"
#include "flight_recorder.hpp"
#include "request.hpp"
#include "shm_collectives.hpp"
#include "shm_hierarchy.hpp"
#include "span.hpp"
#include "stats.hpp"

namespace trident {

class Comm {
 public:
  static constexpr int kUndefined = MPI_UNDEFINED;

  Comm() = default;  // a null communicator: valid() is false
  static Comm world() { return Comm(MPI_COMM_WORLD, "world", false); }
  static Comm borrow(MPI_Comm comm, std::string name) { return Comm(comm, std::move(name), false); }
  static Comm own(MPI_Comm comm, std::string name) { return Comm(comm, std::move(name), true); }

  Comm(Comm&& other) noexcept { *this = std::move(other); }
  Comm& operator=(Comm&& other) noexcept {
    if (this != &other) {
      release();
      comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
      owning_ = std::exchange(other.owning_, false);
      name_ = std::move(other.name_);
      rank_ = other.rank_;
      size_ = other.size_;
      group_ = std::exchange(other.group_, nullptr);
    }
    return *this;
  }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm() { release(); }

  // Ranks with the same color form a communicator, ordered by key. kUndefined gives a null Comm.
  [[nodiscard]] Comm split(int color, int key, std::string name) const {
    MPI_Comm out = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(comm_, color, key, &out), "MPI_Comm_split");
    return Comm(out, std::move(name), true);
  }
  [[nodiscard]] Comm dup(std::string name) const {
    MPI_Comm out = MPI_COMM_NULL;
    check_mpi(MPI_Comm_dup(comm_, &out), "MPI_Comm_dup");
    return Comm(out, std::move(name), true);
  }
  // A non-owning handle to the same communicator.
  Comm borrowed() const { return Comm(comm_, name_, false); }

  bool valid() const { return comm_ != MPI_COMM_NULL; }
  bool owning() const { return owning_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& name() const { return name_; }
  MPI_Comm get() const { return comm_; }

  // --- collectives (nonblocking forms return a Request; blocking forms wait) -----------------

  // buf <- op over the group of buf, in place.
  template <class T>
  Request iall_reduce(Span<T> buf, ReduceOp op = ReduceOp::sum) const {
    return start(CommOp::all_reduce, buf.bytes(), -1, [&](MPI_Request* r) {
      return MPI_Iallreduce(MPI_IN_PLACE, buf.data(), count(buf.size()), mpi_type<T>(),
                            mpi_op<T>(op), comm_, r);
    });
  }
  // out <- shard `rank` of the sum of `in`; in: (size * n), out: (n).
  template <class T>
  Request ireduce_scatter(Span<const T> in, Span<T> out) const {
    require_shards(CommOp::reduce_scatter, in.size(), out.size(),
                   "input must be group size x output");
    return start(CommOp::reduce_scatter, in.bytes(), -1, [&](MPI_Request* r) {
      return MPI_Ireduce_scatter_block(in.data(), out.data(), count(out.size()), mpi_type<T>(),
                                       mpi_op<T>(ReduceOp::sum), comm_, r);
    });
  }
  // As ireduce_scatter, in place: buf (size * n) holds the input; the result lands in buf[0, n).
  template <class T>
  Request ireduce_scatter_in_place(Span<T> buf) const {
    require(buf.size() % static_cast<std::size_t>(size_) == 0,
            "reduce_scatter on '" + name_ + "': buffer not divisible by the group size");
    return start(CommOp::reduce_scatter, buf.bytes(), -1, [&](MPI_Request* r) {
      const int n = count(buf.size() / static_cast<std::size_t>(size_));
      return MPI_Ireduce_scatter_block(MPI_IN_PLACE, buf.data(), n, mpi_type<T>(),
                                       mpi_op<T>(ReduceOp::sum), comm_, r);
    });
  }
  // out <- the shards `in` of all ranks in rank order; in: (n), out: (size * n).
  template <class T>
  Request iall_gather(Span<const T> in, Span<T> out) const {
    require_shards(CommOp::all_gather, out.size(), in.size(), "output must be group size x input");
    return start(CommOp::all_gather, out.bytes(), -1, [&](MPI_Request* r) {
      return MPI_Iallgather(in.data(), count(in.size()), mpi_type<T>(), out.data(),
                            count(in.size()), mpi_type<T>(), comm_, r);
    });
  }
  // As iall_gather, with this rank's shard already in place at buf[rank * n, (rank+1) * n).
  template <class T>
  Request iall_gather_in_place(Span<T> buf) const {
    require(buf.size() % static_cast<std::size_t>(size_) == 0,
            "all_gather on '" + name_ + "': buffer not divisible by the group size");
    return start(CommOp::all_gather, buf.bytes(), -1, [&](MPI_Request* r) {
      const int n = count(buf.size() / static_cast<std::size_t>(size_));
      return MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf.data(), n, mpi_type<T>(), comm_,
                            r);
    });
  }
  template <class T>
  Request ibroadcast(Span<T> buf, int root) const {
    return start(CommOp::broadcast, buf.bytes(), root, [&](MPI_Request* r) {
      return MPI_Ibcast(buf.data(), count(buf.size()), mpi_type<T>(), root, comm_, r);
    });
  }
  // out (read at root only) <- sum of `in` over the group.
  template <class T>
  Request ireduce(Span<const T> in, Span<T> out, int root) const {
    return start(CommOp::reduce, in.bytes(), root, [&](MPI_Request* r) {
      return MPI_Ireduce(in.data(), out.data(), count(in.size()), mpi_type<T>(),
                         mpi_op<T>(ReduceOp::sum), root, comm_, r);
    });
  }
  template <class T>
  Request isend(Span<const T> buf, int dest, int tag) const {
    return start(CommOp::send, buf.bytes(), dest, [&](MPI_Request* r) {
      return MPI_Isend(buf.data(), count(buf.size()), mpi_type<T>(), dest, tag, comm_, r);
    });
  }
  template <class T>
  Request irecv(Span<T> buf, int source, int tag) const {
    return start(CommOp::recv, buf.bytes(), source, [&](MPI_Request* r) {
      return MPI_Irecv(buf.data(), count(buf.size()), mpi_type<T>(), source, tag, comm_, r);
    });
  }
  Request ibarrier() const {
    return start(CommOp::barrier, 0, -1, [&](MPI_Request* r) { return MPI_Ibarrier(comm_, r); });
  }

  template <class T>
  void all_reduce(Span<T> buf, ReduceOp op = ReduceOp::sum) const {
    if constexpr (shm::kReducible<T>) {
      if (run_shared(CommOp::all_reduce, buf.bytes(), -1,
                     [&](SharedSegment* s, NodeHierarchy* h, const Waiting& w) {
                       shm::all_reduce(s, h, buf, op, w);
                     }))
        return;
    }
    iall_reduce(buf, op).wait();
  }
  template <class T>
  void reduce_scatter(Span<const T> in, Span<T> out) const {
    if constexpr (shm::kReducible<T>) {
      require_shards(CommOp::reduce_scatter, in.size(), out.size(),
                     "input must be group size x output");
      if (run_shared(CommOp::reduce_scatter, in.bytes(), -1,
                     [&](SharedSegment* s, NodeHierarchy* h, const Waiting& w) {
                       shm::reduce_scatter(s, h, in, out, rank_, w);
                     }))
        return;
    }
    ireduce_scatter(in, out).wait();
  }
  template <class T>
  void all_gather(Span<const T> in, Span<T> out) const {
    require_shards(CommOp::all_gather, out.size(), in.size(), "output must be group size x input");
    if (run_shared(
            CommOp::all_gather, out.bytes(), -1,
            [&](SharedSegment* s, NodeHierarchy*, const Waiting& w) {
              shm::all_gather(*s, in, out, w);
            },
            true))
      return;
    iall_gather(in, out).wait();
  }
  template <class T>
  void broadcast(Span<T> buf, int root) const {
    const bool root_in_group = root >= 0 && root < size_;  // else MPI reports the error
    if (root_in_group && run_shared(
                             CommOp::broadcast, buf.bytes(), root,
                             [&](SharedSegment* s, NodeHierarchy*, const Waiting& w) {
                               shm::broadcast(*s, buf, root, w);
                             },
                             true))
      return;
    ibroadcast(buf, root).wait();
  }
  template <class T>
  void reduce(Span<const T> in, Span<T> out, int root) const {
    ireduce(in, out, root).wait();
  }
  template <class T>
  void send(Span<const T> buf, int dest, int tag) const {
    isend(buf, dest, tag).wait();
  }
  template <class T>
  void recv(Span<T> buf, int source, int tag) const {
    irecv(buf, source, tag).wait();
  }
  void barrier() const { ibarrier().wait(); }

  // One value reduced over the group (sum, max or min).
  template <class T>
  [[nodiscard]] T all_reduce_value(T value, ReduceOp op = ReduceOp::sum) const {
    all_reduce(Span<T>(&value, 1), op);
    return value;
  }

 private:
  Comm(MPI_Comm comm, std::string name, bool owning)
      : comm_(comm), owning_(owning && comm != MPI_COMM_NULL), name_(std::move(name)) {
    if (comm_ != MPI_COMM_NULL) {
      MPI_Comm_rank(comm_, &rank_);
      MPI_Comm_size(comm_, &size_);
    }
  }

  void release() noexcept {
    if (!owning_ || comm_ == MPI_COMM_NULL) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
    comm_ = MPI_COMM_NULL;
    owning_ = false;
  }

  static int count(std::size_t n) {
    require(n <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
            "message larger than INT_MAX elements");
    return static_cast<int>(n);
  }

  void require_shards(CommOp op, std::size_t full, std::size_t shard, const char* what) const {
    require(full == shard * static_cast<std::size_t>(size_),
            std::string(to_string(op)) + " on '" + name_ + "': " + what);
  }

  // Records the start of one operation (begun at t0) in the flight recorder and sets `what`;
  // false when the skip-collective fault makes this rank skip it (recorded, not posted).
  // peer: the group rank of the peer or root, -1 for none.
  bool begin(CommOp op, std::size_t bytes, int peer, double t0, Waiting& what) const {
    require(valid(), std::string("communication on a null communicator (") + to_string(op) + ")");
    if (!group_) group_ = flight_recorder().group(comm_, name_);
    FlightRecorder& recorder = flight_recorder();
    const bool skip = op != CommOp::send && op != CommOp::recv && skip_fault(recorder.step());
    what = Waiting{op, group_, peer, recorder.begin(op, group_, peer, bytes, t0, skip)};
    return !skip;
  }
  // Counts one operation and the seconds since t0 (stats.hpp's convention).
  void count(CommOp op, std::size_t bytes, double t0) const {
    if (size_ < 2) return;  // a group of one moves nothing between ranks: not counted
    comm_stats().record(name_, size_, op, bytes);
    comm_stats().add_seconds(name_, op, detail::now_seconds() - t0);
  }

  // Starts one operation through `post`, counts and records it, and wraps it in a Request.
  template <class Post>
  Request start(CommOp op, std::size_t bytes, int peer, Post&& post) const {
    const double t0 = detail::now_seconds();
    Waiting what;
    if (!begin(op, bytes, peer, t0, what)) return Request();
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(post(&request), to_string(op));
    count(op, bytes, t0);
    Request started(request, name_, op, what);
    const bool collective = op != CommOp::send && op != CommOp::recv;  // (sends may need recvs)
    if (collective && !overlap_communication()) started.wait();
    return started;
  }

  // Runs a blocking collective through the group's shared-memory segment, or its nodes'
  // segments and MPI across them when it spans nodes (shm_hierarchy.hpp; `run` gets the one
  // that is not null), counted and recorded as start() does; false (nothing done) when the path
  // is off, the message is below shm_tuning().min_bytes, or the operation only copies
  // (`copy_only`) and the group spans nodes or fits its cores. The same on every rank: the
  // sizes and the group's layout are.
  template <class Run>
  bool run_shared(CommOp op, std::size_t bytes, int peer, Run&& run, bool copy_only = false) const {
    const ShmTuning& tuning = shm_tuning();
    if (!tuning.enabled || !valid() || size_ < 2 || bytes < tuning.min_bytes) return false;
    SharedSegment* segment = shared_segment(comm_);  // made on first use: collective
    if (copy_only && (!segment || !segment->oversubscribed())) return false;
    NodeHierarchy* nodes = segment ? nullptr : node_hierarchy(comm_);  // collective, once
    const double t0 = detail::now_seconds();
    Waiting what;
    if (!begin(op, bytes, peer, t0, what)) return true;
    run(segment, nodes, what);
    count(op, bytes, t0);
    flight_recorder().end(what.record, detail::now_seconds());
    return true;
  }

  // The fault skip-collective: true once, for this rank's first collective at the step named.
  static bool skip_fault(int step) {
    static bool fired = false;
    if (fired || !fault::armed("skip-collective", world_rank(), step)) return false;
    fired = true;
    std::fprintf(stderr, "trident fault: rank %d skips a collective at step %d\n", world_rank(),
                 step);
    return true;
  }
  static int world_rank() {
    int r = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owning_ = false;
  std::string name_;
  int rank_ = -1;
  int size_ = 0;
  mutable GroupRecord* group_ = nullptr;  // registered on the first call
};

// Ranks of `comm` that share this node's memory (MPI_COMM_TYPE_SHARED).
[[nodiscard]] inline Comm node_comm(const Comm& comm) {
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(
      MPI_Comm_split_type(comm.get(), MPI_COMM_TYPE_SHARED, comm.rank(), MPI_INFO_NULL, &node),
      "MPI_Comm_split_type");
  return Comm::own(node, "node");
}

}  // namespace trident
