// trident/core/comm_handle.hpp: CommHandle, what every operation of Comm (comm.hpp) goes
// through: the MPI communicator, owned or borrowed, and how one operation is started, counted
// and recorded.
//
// RAII over MPI_Comm, explicit about ownership: Comm::world() and Comm::borrow() never free the
// handle; split() and dup() return owning communicators that free it on destruction. Every
// operation is started nonblocking and completed by the wait policy of request.hpp, is
// counted in comm_stats() under the communicator's name (see stats.hpp for the convention) and
// is recorded by the flight recorder (flight_recorder.hpp) for the watchdog's report. The fault
// skip-collective (fault.hpp) makes this rank skip one collective: it is recorded, not posted.
// run_shared() routes a blocking collective through shared memory (shm_collectives.hpp,
// shm_hierarchy.hpp) under the same bookkeeping.
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

class CommHandle {
 public:
  CommHandle() = default;  // a null communicator: valid() is false
  CommHandle(CommHandle&& other) noexcept { *this = std::move(other); }
  CommHandle& operator=(CommHandle&& other) noexcept {
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
  CommHandle(const CommHandle&) = delete;
  CommHandle& operator=(const CommHandle&) = delete;
  ~CommHandle() { release(); }

  bool valid() const { return comm_ != MPI_COMM_NULL; }
  bool owning() const { return owning_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& name() const { return name_; }
  MPI_Comm get() const { return comm_; }

 protected:
  CommHandle(MPI_Comm comm, std::string name, bool owning)
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
  bool begin(CommOp op, std::size_t bytes, int peer, double t0, Waiting& what, int tag = -1) const {
    require(valid(), std::string("communication on a null communicator (") + to_string(op) + ")");
    if (!group_) group_ = flight_recorder().group(comm_, name_);
    FlightRecorder& recorder = flight_recorder();
    const bool skip = op != CommOp::send && op != CommOp::recv && skip_fault(recorder.step());
    what = Waiting{op, group_, peer, recorder.begin(op, group_, peer, bytes, t0, skip, tag)};
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
  Request start(CommOp op, std::size_t bytes, int peer, Post&& post, int tag = -1) const {
    const double t0 = detail::now_seconds();
    Waiting what;
    if (!begin(op, bytes, peer, t0, what, tag)) return Request();
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
  // (`copy_only`) and the group is on one node and fits its cores (there MPI's one copy wins).
  // The same on every rank: the sizes and the group's layout are.
  template <class Run>
  bool run_shared(CommOp op, std::size_t bytes, int peer, Run&& run, bool copy_only = false) const {
    const ShmTuning& tuning = shm_tuning();
    if (!tuning.enabled || !valid() || size_ < 2 || bytes < tuning.min_bytes) return false;
    SharedSegment* segment = shared_segment(comm_);  // made on first use: collective
    if (copy_only && segment && !segment->oversubscribed()) return false;
    NodeHierarchy* nodes = segment ? nullptr : node_hierarchy(comm_);  // collective, once
    recorded(op, bytes, peer, [&](const Waiting& what) { run(segment, nodes, what); });
    return true;
  }
  // Runs a blocking operation, run(what), counted and recorded as start() does.
  template <class Run>
  void recorded(CommOp op, std::size_t bytes, int peer, Run&& run) const {
    const double t0 = detail::now_seconds();
    Waiting what;
    if (!begin(op, bytes, peer, t0, what)) return;
    flight_recorder().waiting(what.record, t0);  // blocking: waits from its start
    run(what);
    count(op, bytes, t0);
    flight_recorder().end(what.record, detail::now_seconds());
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

}  // namespace trident
