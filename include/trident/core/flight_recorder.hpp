// trident/core/flight_recorder.hpp: the last 64 communication calls of this process, kept for
// the watchdog's report (watchdog.hpp), as PyTorch's NCCL "flight recorder" keeps them.
//
// Each call records: the operation, the group (the communicator's name: tp, pp, dp, emb, world),
// the peer (send/recv) or root (broadcast/reduce) as a rank of the group, the bytes, the
// training step and microbatch it belongs to, and its start and end time. A collective also
// gets its sequence number on its group: the n-th collective this rank started on a group with
// that name and those members. MPI matches collectives by their order on a communicator and
// every member of a group issues the same sequence, so a rank that waits for collective #k on
// a group while a member has started fewer than k there names the member that did not arrive.
// Groups are keyed by (name, world ranks of the members), computed once per communicator, so
// every member computes the same key and the counts of communicators rebuilt with the same
// members (as each test builds its mesh again) continue one sequence.
// Recording costs a few stores per call; a ring of 64 slots never allocates. A training step may
// also keep a log of all its calls (begin_step_log), for train/waits.hpp's attribution of who
// made whom wait: then each call also records when this rank began to wait for it.
#pragma once

#include <mpi.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "stats.hpp"

namespace trident {

namespace detail {
inline double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}
}  // namespace detail

// One communicator as the watchdog knows it: its name, its key and the collectives started.
struct GroupRecord {
  std::string name;
  std::vector<int> world_ranks;   // the members, by group rank
  std::uint64_t key = 0;          // FNV-1a over the name and world_ranks: equal on every member
  std::uint64_t collectives = 0;  // collectives this rank started on groups with this key
};

struct CallRecord {
  CommOp op = CommOp::barrier;
  const GroupRecord* group = nullptr;
  int peer = -1;  // group rank of the peer (send/recv) or root; -1 for none
  std::uint64_t bytes = 0;
  std::uint64_t sequence = 0;  // collectives: the number on the group (1-based); 0 otherwise
  int step = -1, microbatch = -1;
  double start = 0, end = 0;  // seconds (detail::now_seconds); end 0: not complete
  bool skipped = false;       // not posted: the skip-collective fault
  int tag = -1;               // send/recv: the message's tag
  double blocked_from = 0;    // when this rank began to wait for it (0: not yet); end if never
};

class FlightRecorder {
 public:
  static constexpr int kCapacity = 64;

  // The group of `comm` (named `name`), registered on first sight. Local (no communication).
  GroupRecord* group(MPI_Comm comm, const std::string& name) {
    std::vector<int> members = world_ranks(comm);
    std::uint64_t key = 1469598103934665603ull;  // FNV-1a
    auto mix = [&](const void* data, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i)
        key = (key ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
    };
    mix(name.data(), name.size());
    mix(members.data(), members.size() * sizeof(int));
    GroupRecord& g = groups_[key];
    if (g.world_ranks.empty()) g = {name, std::move(members), key, 0};
    return &g;
  }
  const std::map<std::uint64_t, GroupRecord>& groups() const { return groups_; }

  // Records the start of a call; returns its id for end(). A collective's sequence number
  // counts it on its group unless it was skipped (never posted).
  std::uint64_t begin(CommOp op, GroupRecord* group, int peer, std::uint64_t bytes, double now,
                      bool skipped = false, int tag = -1) {
    const bool collective = op != CommOp::send && op != CommOp::recv;
    CallRecord& r = ring_[count_ % kCapacity];
    r = {op,          group, peer,
         bytes,       0,     step_,
         microbatch_, now,   skipped ? now : 0.0,
         skipped,     tag,   skipped ? now : 0.0};
    if (collective && group) r.sequence = group->collectives + 1;
    if (collective && group && !skipped) group->collectives += 1;
    if (logging_) log_.push_back(r);
    return count_++;
  }
  // Records that this rank began to wait for call `id` (the first time only).
  void waiting(std::uint64_t id, double now) {
    for (CallRecord* r : {ring_slot(id), log_slot(id)})
      if (r && r->blocked_from == 0) r->blocked_from = now;
  }
  // Records the end of call `id` (ignored once the ring has moved past it); a call never waited
  // for was blocked for no time.
  void end(std::uint64_t id, double now) {
    waiting(id, now);
    for (CallRecord* r : {ring_slot(id), log_slot(id)})
      if (r) r->end = now;
  }

  // The step log: every call begun from begin_step_log() to end_step_log() (their ends and
  // waits recorded as they come), kept until the next begin_step_log(); only while someone reads
  // it (keep_step_log(true): train/wait_attribution.hpp), else empty.
  void keep_step_log(bool on) { keep_log_ = on; }
  void begin_step_log() {
    log_.clear();
    log_first_ = count_;
    logging_ = keep_log_;
  }
  void end_step_log() { logging_ = false; }
  const std::vector<CallRecord>& step_log() const { return log_; }
  const CallRecord* find(std::uint64_t id) const {
    return id < count_ && count_ - id <= kCapacity ? &ring_[id % kCapacity] : nullptr;
  }

  // The recorded calls, oldest first.
  std::vector<CallRecord> recent() const {
    std::vector<CallRecord> out;
    const std::uint64_t first = count_ > kCapacity ? count_ - kCapacity : 0;
    for (std::uint64_t i = first; i < count_; ++i) out.push_back(ring_[i % kCapacity]);
    return out;
  }
  std::uint64_t calls() const { return count_; }

  // What the training loop is doing, stamped on every call: step and microbatch (-1: none).
  void set_step(int step) { step_ = step; }
  void set_microbatch(int microbatch) { microbatch_ = microbatch; }
  int step() const { return step_; }

 private:
  static std::vector<int> world_ranks(MPI_Comm comm) {
    MPI_Group mine = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
    MPI_Comm_group(comm, &mine);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int n = 0;
    MPI_Group_size(mine, &n);
    std::vector<int> ranks(static_cast<std::size_t>(n)), out(ranks.size());
    for (int i = 0; i < n; ++i) ranks[static_cast<std::size_t>(i)] = i;
    MPI_Group_translate_ranks(mine, n, ranks.data(), world, out.data());
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
    return out;
  }

  CallRecord* ring_slot(std::uint64_t id) {
    return id < count_ && count_ - id <= kCapacity ? &ring_[id % kCapacity] : nullptr;
  }
  CallRecord* log_slot(std::uint64_t id) {
    return id >= log_first_ && id - log_first_ < log_.size() ? &log_[id - log_first_] : nullptr;
  }

  std::array<CallRecord, kCapacity> ring_{};
  std::uint64_t count_ = 0;
  std::vector<CallRecord> log_;  // the step log
  std::uint64_t log_first_ = 0;  // the id of log_[0]
  bool logging_ = false, keep_log_ = false;
  std::map<std::uint64_t, GroupRecord> groups_;  // node addresses are stable
  int step_ = -1, microbatch_ = -1;
};

// The process-wide recorder every Comm reports to.
inline FlightRecorder& flight_recorder() {
  static FlightRecorder recorder;
  return recorder;
}

}  // namespace trident
