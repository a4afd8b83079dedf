// trident/core/shared_memory.hpp: a communicator's shared-memory segment, where the collectives
// of shm_collectives.hpp move their data.
//
// Ranks of one node can read each other's memory: an MPI-3 shared window
// (MPI_Win_allocate_shared) gives each rank a region that every other rank of the communicator
// maps too. A communicator gets its segment on its first collective that takes this path (so
// the making is collective, as that call is), cached on the MPI communicator as an attribute:
// every Comm handle to it (world(), borrowed()) shares one segment, and MPI_Comm_free frees it
// through the attribute's delete callback. A communicator whose ranks span nodes
// (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) finds fewer ranks than the group; the nodes of
// cmake/cluster.sh have separate IPC namespaces, so they are found apart) caches "none" and
// keeps MPI's collectives.
//
// Bounded memory: each rank's region is one 128-byte line (rank 0's holds the barrier), then
// kBuffers buffers of chunk_bytes (256 KiB; 4 MiB when the ranks outnumber the cores); messages
// larger than a buffer are cut into rounds and pipelined through them (shm_collectives.hpp).
// Barrier: a central counter; the last rank to arrive resets it and advances the generation.
// A waiting rank reads the generation with a pause in between for spin_seconds (when the
// group has no more ranks than this process has cores), then sleeps on it (a futex, woken by
// the last arrival). Sleeping matters when ranks outnumber
// cores: a rank yielding in a loop still takes its fair share of the core from the ranks that
// copy and add (measured, bench_comm at 8 ranks on 2 cores: a 1 MiB all-reduce took ~2 ms per
// barrier with yields alone). The waits keep trident's deadline and watchdog (request.hpp).
#pragma once

#include <linux/futex.h>
#include <mpi.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "error.hpp"
#include "request.hpp"
#include "shared_window.hpp"

namespace trident {

// When the blocking collectives take the shared-memory path. Read from the environment when the
// process starts: TRIDENT_SHM=0 turns it off; TRIDENT_SHM_MIN_BYTES (smaller messages keep
// MPI's path); TRIDENT_SHM_CHUNK_BYTES (one pipeline buffer per rank, both sizes;
// TRIDENT_SHM_OVERSUBSCRIBED_CHUNK_BYTES the second only; read when a segment is made, so they
// must be equal on every rank); TRIDENT_SHM_SPIN_US (spin_seconds, in us);
// TRIDENT_SHM_NODE_RANKS=k (node_ranks, for tests): each block of k consecutive world ranks
// counts as a node of its own (0: the real nodes only).
struct ShmTuning {
  bool enabled = true;
  std::size_t min_bytes = 16 << 10;
  // 2 ranks on 2 cores, all_reduce of 1-4 MiB: 10-20% faster than 1 MiB (fastest of 100 calls;
  // 16-64 MiB: no clear difference)
  std::size_t chunk_bytes = 256 << 10;
  // the buffer of a group with more ranks than cores, where each round costs every rank a turn
  // on a core (bench_comm, 8 ranks on 2 cores: 1.3-1.5x faster than 1 MiB at 4-16 MiB)
  std::size_t oversubscribed_chunk_bytes = 4 << 20;
  double spin_seconds = 50e-6;  // a barrier's wait yields this long, then sleeps
  int node_ranks = 0;
};

inline ShmTuning& shm_tuning() {
  static ShmTuning tuning = [] {
    ShmTuning t;
    if (const char* on = std::getenv("TRIDENT_SHM")) t.enabled = std::atoi(on) != 0;
    if (const char* b = std::getenv("TRIDENT_SHM_MIN_BYTES")) t.min_bytes = std::atol(b);
    if (const char* b = std::getenv("TRIDENT_SHM_CHUNK_BYTES"))
      t.chunk_bytes = t.oversubscribed_chunk_bytes = std::atol(b);
    if (const char* b = std::getenv("TRIDENT_SHM_OVERSUBSCRIBED_CHUNK_BYTES"))
      t.oversubscribed_chunk_bytes = std::atol(b);
    if (const char* us = std::getenv("TRIDENT_SHM_SPIN_US")) t.spin_seconds = std::atof(us) * 1e-6;
    if (const char* k = std::getenv("TRIDENT_SHM_NODE_RANKS")) t.node_ranks = std::atoi(k);
    return t;
  }();
  return tuning;
}

class SharedSegment {
 public:
  static constexpr int kBuffers = 3;
  static constexpr std::size_t kLine = 128;  // the barrier's line (two cache lines: no sharing)

  // Collective over `comm`, whose ranks all share one node's memory; buffers of chunk_bytes, or
  // of oversubscribed_chunk_bytes when the group has more ranks than cores.
  SharedSegment(MPI_Comm comm, std::size_t chunk_bytes, std::size_t oversubscribed_chunk_bytes) {
    MPI_Comm_size(comm, &size_);
    MPI_Comm_rank(comm, &rank_);
    cpu_set_t cores;
    int fits = sched_getaffinity(0, sizeof cores, &cores) == 0 && size_ <= CPU_COUNT(&cores);
    MPI_Request agree = MPI_REQUEST_NULL;  // the same answer on every rank
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, &fits, 1, MPI_INT, MPI_MIN, comm, &agree),
              "MPI_Iallreduce");
    detail::complete(agree, nullptr, Waiting{});
    oversubscribed_ = !fits;
    chunk_bytes_ = ((fits ? chunk_bytes : oversubscribed_chunk_bytes) + kLine - 1) / kLine * kLine;
    spin_seconds_ = fits ? shm_tuning().spin_seconds : 0;
    window_ = std::make_unique<SharedWindow>(comm, kLine + kBuffers * chunk_bytes_);
    words_ = window_->of<BarrierWords>(0);
    if (rank_ == 0) *words_ = BarrierWords{};
    MPI_Request request = MPI_REQUEST_NULL;  // the barrier is zero before anyone uses it
    check_mpi(MPI_Ibarrier(comm, &request), "MPI_Ibarrier");
    detail::complete(request, nullptr, Waiting{});
  }
  // Collective: frees the window (shared_window.hpp).
  ~SharedSegment() = default;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  int size() const { return size_; }
  int rank() const { return rank_; }
  // The group has more ranks than this process has cores (the same on every rank).
  bool oversubscribed() const { return oversubscribed_; }
  std::size_t chunk_bytes() const { return chunk_bytes_; }
  // Buffer b of rank j: chunk_bytes, readable and writable by every rank.
  template <class T>
  T* buffer(int j, int b) const {
    return reinterpret_cast<T*>(window_->of<char>(j) + kLine +
                                static_cast<std::size_t>(b) * chunk_bytes_);
  }

  // Reserves `rounds` pipeline rounds (shm_collectives.hpp); returns the first one's number.
  // The same on every rank: every rank runs the same collectives with the same sizes.
  std::size_t next_round(std::size_t rounds) { return std::exchange(rounds_, rounds_ + rounds); }

  // The barrier in two halves: arrive() says this rank is done with what came before;
  // wait_all() returns once every rank has arrived as often as this one.
  void arrive() {
    ++arrived_;
    if (__atomic_add_fetch(&words_->arrived, 1, __ATOMIC_SEQ_CST) != static_cast<unsigned>(size_))
      return;
    __atomic_store_n(&words_->arrived, 0, __ATOMIC_RELAXED);  // ordered by the next store
    __atomic_store_n(&words_->generation, arrived_, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&words_->sleepers, __ATOMIC_SEQ_CST) > 0)
      syscall(SYS_futex, &words_->generation, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  }
  void wait_all(const Waiting& what) {
    std::uint32_t seen = 0;
    auto passed = [&] {  // generations compare modulo 2^32
      seen = __atomic_load_n(&words_->generation, __ATOMIC_ACQUIRE);
      return static_cast<std::int32_t>(seen - arrived_) >= 0;
    };
    const double spin = spin_seconds_;
    // sleep at most 10 ms between the watchdog's checks; 0.2 ms while requests are pending
    const timespec most{0, detail::pending_requests() > 0 ? 200'000 : 10'000'000};
    detail::wait_until(passed, true, what, [&](double waited) {
      if (detail::pending_requests() > 0) detail::progress();  // request.hpp
      if (waited < spin) return cpu_relax();
      // a sleeper is counted before it sleeps: either the last arrival sees it and wakes it,
      // or the generation has moved on and FUTEX_WAIT returns at once
      __atomic_add_fetch(&words_->sleepers, 1, __ATOMIC_SEQ_CST);
      syscall(SYS_futex, &words_->generation, FUTEX_WAIT, seen, &most, nullptr, 0);
      __atomic_sub_fetch(&words_->sleepers, 1, __ATOMIC_SEQ_CST);
    });
  }
  // A spinning wait's pause: keeps the core (sched_yield() would hand it to any other job
  // on it, for a whole time slice, while the peer is about to arrive).
  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  void barrier(const Waiting& what) {
    arrive();
    wait_all(what);
  }

 private:
  struct BarrierWords {
    std::uint32_t arrived;     // ranks arrived at the current barrier
    std::uint32_t generation;  // barriers completed (the futex word)
    std::uint32_t sleepers;    // ranks asleep on the generation
  };

  std::unique_ptr<SharedWindow> window_;  // kLine, then kBuffers buffers, per rank
  BarrierWords* words_ = nullptr;         // in rank 0's line
  int size_ = 0, rank_ = 0;
  std::size_t chunk_bytes_ = 0;
  double spin_seconds_ = 0;  // a barrier's wait yields this long, then sleeps
  bool oversubscribed_ = false;
  std::uint32_t arrived_ = 0;  // barriers this rank has arrived at (modulo 2^32)
  std::size_t rounds_ = 0;     // pipeline rounds run on the segment
};

namespace detail {
// An object of type T cached on a communicator as an MPI attribute, deleted with it.
template <class T>
int delete_cached(MPI_Comm, int, void* object, void*) {
  delete static_cast<T*>(object);
  return MPI_SUCCESS;
}
template <class T>
int cached_keyval() {
  static int key = [] {
    int k = MPI_KEYVAL_INVALID;
    check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &delete_cached<T>, &k, nullptr),
              "MPI_Comm_create_keyval");
    return k;
  }();
  return key;
}
// The T cached on `comm`; on the first call, make() builds it (nullptr is cached too).
template <class T, class Make>
T* cached_on(MPI_Comm comm, Make&& make) {
  void* value = nullptr;
  int found = 0;
  check_mpi(MPI_Comm_get_attr(comm, cached_keyval<T>(), &value, &found), "MPI_Comm_get_attr");
  if (found) return static_cast<T*>(value);
  T* object = make();
  check_mpi(MPI_Comm_set_attr(comm, cached_keyval<T>(), object), "MPI_Comm_set_attr");
  return object;
}

// The ranks of `comm` on this rank's node, in the order of `comm` (MPI_COMM_TYPE_SHARED; with
// shm_tuning().node_ranks = k, also in this rank's block of k world ranks). Collective.
inline MPI_Comm split_node(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  if (const int k = shm_tuning().node_ranks; k > 0) {
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm block = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(node, world_rank / k, rank, &block), "MPI_Comm_split");
    MPI_Comm_free(&node);
    node = block;
  }
  return node;
}
}  // namespace detail

// The segment of `comm`; nullptr when its ranks span nodes. Collective on the first call.
inline SharedSegment* shared_segment(MPI_Comm comm) {
  return detail::cached_on<SharedSegment>(comm, [comm]() -> SharedSegment* {
    int size = 0, node_size = 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm node = detail::split_node(comm);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    if (node_size != size) return nullptr;
    // at least 64 bytes per rank and round: a reduce-scatter's round holds one piece per rank
    const ShmTuning& tuning = shm_tuning();
    const std::size_t least = 64 * static_cast<std::size_t>(size);
    return new SharedSegment(comm, std::max(tuning.chunk_bytes, least),
                             std::max(tuning.oversubscribed_chunk_bytes, least));
  });
}

}  // namespace trident
