// trident/core/all_to_all.hpp: the all-to-all with variable counts (MPI_Alltoallv's shape) that
// mixture-of-experts layers dispatch their tokens with (expert parallelism: Megatron-Core's
// all-to-all token dispatcher, DeepSpeed-MoE): the layout of its blocks, checked, and how MPI
// runs it. Comm::all_to_all_v and i_all_to_all_v (comm.hpp) call it; the shared-memory path of
// a group on one node is shm_all_to_all.hpp.
//
// Layout: rank r sends send_counts[j] elements to rank j and receives recv_counts[j] from it;
// the blocks of each buffer are consecutive in rank order, so block j starts at the sum of the
// counts before it (the displacements are the prefix sums). recv_counts[j] must be what rank j
// sends to r: Comm::exchange_counts gives it when only the senders know (the counts are
// exchanged first, as Megatron-Core's dispatcher does before the tokens).
//
// Counts past 2^31 elements: MPI_Alltoallv takes int counts and displacements; where MPI is at
// least version 4 (MPICH 4 here) MPI_Ialltoallv_c takes MPI_Count and MPI_Aint, so any count
// passes (checked here at 2^31 + 3 elements: MPICH 4.0.2 moves them, at about 0.2 GB/s).
// Before MPI 4 a count or a displacement past INT_MAX is refused with an Error naming it.
#pragma once

#include <mpi.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "datatype.hpp"
#include "error.hpp"

namespace trident {

// One count per peer, in elements.
using AllToAllCounts = std::vector<std::int64_t>;

namespace a2a {

// One buffer's blocks: count[j] elements for (or from) rank j at start[j]; total: their sum.
struct Blocks {
  std::vector<std::size_t> count, start;
  std::size_t total = 0;
};

// The blocks of `counts` in a buffer of `span` elements of a group of p ranks; an Error naming
// the group (`where`), the vector (`what`) and the offending entry when there are not p counts,
// one is negative, or they sum past the buffer.
inline Blocks blocks(const AllToAllCounts& counts, std::size_t span, int p,
                     const std::string& where, const char* what) {
  const std::string name = "'" + where + "': " + what;
  if (counts.size() != static_cast<std::size_t>(p))
    fail(name + " has " + std::to_string(counts.size()) + " entries, the group has " +
         std::to_string(p) + " ranks");
  Blocks b;
  for (int j = 0; j < p; ++j) {
    if (counts[j] < 0)
      fail(name + "[" + std::to_string(j) + "] = " + std::to_string(counts[j]) + " is negative");
    b.start.push_back(b.total);
    b.count.push_back(static_cast<std::size_t>(counts[j]));
    b.total += b.count.back();
  }
  if (b.total > span)
    fail(name + " sum to " + std::to_string(b.total) + " elements; the buffer holds " +
         std::to_string(span));
  return b;
}

// Both sides of one call, and this rank's own block (which stays: CommStats' `kept`).
struct Layout {
  Blocks send, recv;
  std::size_t own = 0;
};
inline Layout layout(const std::string& where, int p, int rank, std::size_t send_span,
                     const AllToAllCounts& send_counts, std::size_t recv_span,
                     const AllToAllCounts& recv_counts) {
  Layout l{blocks(send_counts, send_span, p, where, "all_to_all_v's send_counts"),
           blocks(recv_counts, recv_span, p, where, "all_to_all_v's recv_counts")};
  l.own = l.send.count[rank];
  if (l.recv.count[rank] != l.own)
    fail("all_to_all_v on '" + where + "': rank " + std::to_string(rank) + " sends itself " +
         std::to_string(l.own) + " elements and expects " + std::to_string(l.recv.count[rank]));
  return l;
}

// `values` as ints for MPI before version 4; an Error naming the entry past INT_MAX.
inline std::vector<int> int_counts(const std::vector<std::size_t>& values,
                                   const std::string& what) {
  std::vector<int> out;
  for (std::size_t j = 0; j < values.size(); ++j) {
    if (values[j] > static_cast<std::size_t>(INT_MAX))
      fail(what + "[" + std::to_string(j) + "] = " + std::to_string(values[j]) +
           " elements: past INT_MAX, which MPI_Alltoallv cannot take before MPI 4 " +
           "(MPI_Alltoallv_c)");
    out.push_back(static_cast<int>(values[j]));
  }
  return out;
}

// MPI's count and displacement arrays of one call. A nonblocking collective reads them until it
// completes: the Request keeps them (Request::keep_alive).
struct MpiArguments {
#if MPI_VERSION >= 4
  std::vector<MPI_Count> send_count, recv_count;
  std::vector<MPI_Aint> send_start, recv_start;
#else
  std::vector<int> send_count, recv_count, send_start, recv_start;
#endif
};

inline std::shared_ptr<MpiArguments> mpi_arguments(const Layout& l, const std::string& where) {
  auto a = std::make_shared<MpiArguments>();
#if MPI_VERSION >= 4
  static_cast<void>(where);
  a->send_count.assign(l.send.count.begin(), l.send.count.end());
  a->recv_count.assign(l.recv.count.begin(), l.recv.count.end());
  a->send_start.assign(l.send.start.begin(), l.send.start.end());
  a->recv_start.assign(l.recv.start.begin(), l.recv.start.end());
#else
  const std::string name = "all_to_all_v on '" + where + "': ";
  a->send_count = int_counts(l.send.count, name + "send_counts");
  a->recv_count = int_counts(l.recv.count, name + "recv_counts");
  a->send_start = int_counts(l.send.start, name + "the displacement of send block");
  a->recv_start = int_counts(l.recv.start, name + "the displacement of receive block");
#endif
  return a;
}

// Posts the all-to-all (MPI_Ialltoallv_c, or MPI_Ialltoallv before MPI 4).
template <class T>
int post(const T* send, T* recv, const MpiArguments& a, MPI_Comm comm, MPI_Request* request) {
#if MPI_VERSION >= 4
  return MPI_Ialltoallv_c(send, a.send_count.data(), a.send_start.data(), mpi_type<T>(), recv,
                          a.recv_count.data(), a.recv_start.data(), mpi_type<T>(), comm, request);
#else
  return MPI_Ialltoallv(send, a.send_count.data(), a.send_start.data(), mpi_type<T>(), recv,
                        a.recv_count.data(), a.recv_start.data(), mpi_type<T>(), comm, request);
#endif
}

}  // namespace a2a
}  // namespace trident
