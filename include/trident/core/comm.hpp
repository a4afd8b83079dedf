// trident/core/comm.hpp: Comm, an MPI communicator with a name and typed operations:
// collectives (nonblocking forms return a Request, blocking forms wait) and point-to-point.
//
// Ownership, and how each operation is counted (comm_stats()), recorded (flight recorder) and
// waited for: CommHandle (comm_handle.hpp). The blocking all_reduce and reduce_scatter of a group
// on one node take the shared-memory path (shm_collectives.hpp: fixed reduction order, bitwise
// reproducible) from shm_tuning().min_bytes up, hierarchically when the group spans nodes
// (shm_hierarchy.hpp); so do all_gather and broadcast when the group spans nodes or is on one
// node and has more ranks than cores. Smaller messages and the nonblocking forms stay on MPI's
// collectives. Both paths count the same bytes. (Measured, bench_comm: at 2 ranks on 2 cores
// MPI's all_gather and broadcast move a peer's data in one copy and the shared-memory path's two
// copies lose, 0.3-0.8x from 16 KiB to 4 MiB; at 8 ranks on 2 cores the shared-memory path wins
// 1.4-5x.) The all-to-all with variable counts (all_to_all.hpp) of a group on one node takes the
// shared-memory path (shm_all_to_all.hpp) at every size, its nonblocking form MPI's.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "all_to_all.hpp"
#include "comm_handle.hpp"
#include "shm_all_to_all.hpp"

namespace trident {

class Comm : public CommHandle {
 public:
  static constexpr int kUndefined = MPI_UNDEFINED;

  Comm() = default;  // a null communicator: valid() is false
  static Comm world() { return Comm(MPI_COMM_WORLD, "world", false); }
  static Comm borrow(MPI_Comm comm, std::string name) { return Comm(comm, std::move(name), false); }
  static Comm own(MPI_Comm comm, std::string name) { return Comm(comm, std::move(name), true); }

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
    return start(
        CommOp::send, buf.bytes(), dest,
        [&](MPI_Request* r) {
          return MPI_Isend(buf.data(), count(buf.size()), mpi_type<T>(), dest, tag, comm_, r);
        },
        tag);
  }
  template <class T>
  Request irecv(Span<T> buf, int source, int tag) const {
    return start(
        CommOp::recv, buf.bytes(), source,
        [&](MPI_Request* r) {
          return MPI_Irecv(buf.data(), count(buf.size()), mpi_type<T>(), source, tag, comm_, r);
        },
        tag);
  }
  // recv's block j (recv_counts[j] elements) <- rank j's block for this rank (send_counts[j]
  // elements of send go to rank j); blocks consecutive in rank order (all_to_all.hpp). Counted
  // as all_to_all of the send counts' bytes, the own block also as kept (stats.hpp).
  template <class T>
  Request i_all_to_all_v(Span<const T> send, const AllToAllCounts& send_counts, Span<T> recv,
                         const AllToAllCounts& recv_counts) const {
    return post_all_to_all_v(
        send, recv,
        a2a::layout(name_, size_, rank_, send.size(), send_counts, recv.size(), recv_counts));
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
            [&](SharedSegment* s, NodeHierarchy* h, const Waiting& w) {
              shm::all_gather(s, h, in, out, w);
            },
            true))
      return;
    iall_gather(in, out).wait();
  }
  // As all_gather, with this rank's shard already in place at buf[rank * n, (rank+1) * n).
  template <class T>
  void all_gather_in_place(Span<T> buf) const {
    const std::size_t n = buf.size() / static_cast<std::size_t>(size_);
    const Span<const T> mine(buf.data() + static_cast<std::size_t>(rank_) * n, n);
    if (buf.size() % static_cast<std::size_t>(size_) == 0 &&  // else MPI's path reports it
        run_shared(
            CommOp::all_gather, buf.bytes(), -1,
            [&](SharedSegment* s, NodeHierarchy* h, const Waiting& w) {
              shm::all_gather(s, h, mine, buf, w);  // copies its own shard onto itself
            },
            true))
      return;
    iall_gather_in_place(buf).wait();
  }
  template <class T>
  void broadcast(Span<T> buf, int root) const {
    const bool root_in_group = root >= 0 && root < size_;  // else MPI reports the error
    if (root_in_group && run_shared(
                             CommOp::broadcast, buf.bytes(), root,
                             [&](SharedSegment* s, NodeHierarchy* h, const Waiting& w) {
                               shm::broadcast(s, h, buf, root, w);
                             },
                             true))
      return;
    ibroadcast(buf, root).wait();
  }
  // shm::reduce_in_window / gather_in_window over `w`, a shared window of this group's ranks,
  // which must have a shared-memory segment (all on one node): counted and recorded as one
  // all_reduce (all) or reduce_scatter, or one all_gather, of all the ranges' elements.
  template <class T>
  void reduce_in_window(const SharedWindow& w, const std::vector<shm::WindowRange>& ranges,
                        bool all) const {
    in_window<T>(all ? CommOp::all_reduce : CommOp::reduce_scatter, ranges,
                 [&](SharedSegment& s, const Waiting& what) {
                   shm::reduce_in_window<T>(s, w, ranges, all, what);
                 });
  }
  template <class T>
  void gather_in_window(const SharedWindow& w, const std::vector<shm::WindowRange>& ranges) const {
    in_window<T>(CommOp::all_gather, ranges, [&](SharedSegment& s, const Waiting& what) {
      shm::gather_in_window<T>(s, w, ranges, what);
    });
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
  template <class T>
  void all_to_all_v(Span<const T> send, const AllToAllCounts& send_counts, Span<T> recv,
                    const AllToAllCounts& recv_counts) const {
    const a2a::Layout l =
        a2a::layout(name_, size_, rank_, send.size(), send_counts, recv.size(), recv_counts);
    SharedSegment* segment = shm_tuning().enabled && size_ > 1 ? shared_segment(comm_) : nullptr;
    if (!segment) return post_all_to_all_v(send, recv, l).wait();
    std::string wrong;
    recorded(CommOp::all_to_all, l.send.total * sizeof(T), -1, [&](const Waiting& what) {
      keep(CommOp::all_to_all, l.own * sizeof(T));
      wrong = shm::all_to_all_v(*segment, send.data(), l.send, recv.data(), l.recv, what);
    });
    require(wrong.empty(), "all_to_all_v on '" + name_ + "': " + wrong);
  }
  // What each rank will send this one: element j <- rank j's send_counts[this rank] (the counts
  // exchanged before an all_to_all_v whose receivers do not know them). Counted as all_to_all.
  [[nodiscard]] AllToAllCounts exchange_counts(const AllToAllCounts& send_counts) const {
    static_cast<void>(a2a::blocks(send_counts, std::numeric_limits<std::size_t>::max(), size_,
                                  name_, "exchange_counts' send_counts"));
    AllToAllCounts got(send_counts.size());
    const std::size_t one = sizeof(std::int64_t);
    start(CommOp::all_to_all, got.size() * one, -1, [&](MPI_Request* r) {
      keep(CommOp::all_to_all, one);
      return MPI_Ialltoall(send_counts.data(), 1, MPI_INT64_T, got.data(), 1, MPI_INT64_T, comm_,
                           r);
    }).wait();
    return got;
  }

  // An operation on this group run outside MPI (NCCL, backend/device_comm.hpp): run(what) is
  // counted in comm_stats() and recorded by the flight recorder as this communicator's call;
  // `kept` of its bytes stay on this rank (an all-to-all's own block: stats.hpp).
  template <class Run>
  void counted(CommOp op, std::size_t bytes, int peer, Run&& run, std::size_t kept = 0) const {
    recorded(op, bytes, peer, [&](const Waiting& what) {
      keep(op, kept);
      run(what);
    });
  }

  // One value reduced over the group (sum, max or min).
  template <class T>
  [[nodiscard]] T all_reduce_value(T value, ReduceOp op = ReduceOp::sum) const {
    all_reduce(Span<T>(&value, 1), op);
    return value;
  }

 private:
  Comm(MPI_Comm comm, std::string name, bool owning) : CommHandle(comm, std::move(name), owning) {}
  // A collective over a shared window: run(segment, what), counted as `op` of the ranges' bytes.
  template <class T, class Run>
  void in_window(CommOp op, const std::vector<shm::WindowRange>& ranges, Run&& run) const {
    SharedSegment* segment = shared_segment(comm_);
    require(segment != nullptr,
            "a shared-window collective on '" + name_ + "': its ranks span nodes");
    std::size_t n = 0;
    for (const shm::WindowRange& g : ranges) n += g.n;
    recorded(op, n * sizeof(T), -1, [&](const Waiting& what) { run(*segment, what); });
  }
  // Counts `bytes` of an operation being counted as kept on this rank (not in a group of one).
  void keep(CommOp op, std::size_t bytes) const {
    if (size_ > 1 && bytes > 0) comm_stats().add_kept(name_, op, bytes);
  }
  template <class T>
  Request post_all_to_all_v(Span<const T> send, Span<T> recv, const a2a::Layout& l) const {
    std::shared_ptr<a2a::MpiArguments> args = a2a::mpi_arguments(l, name_);
    Request r = start(CommOp::all_to_all, l.send.total * sizeof(T), -1, [&](MPI_Request* q) {
      keep(CommOp::all_to_all, l.own * sizeof(T));
      return a2a::post(send.data(), recv.data(), *args, comm_, q);
    });
    r.keep_alive(args);  // MPI reads the counts until the call completes
    return r;
  }
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
