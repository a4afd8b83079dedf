// trident/core/watchdog.hpp: every wait has a deadline; a hang ends in a report, not forever.
//
// A wait (request.hpp) that lasts longer than the timeout (wait_tuning().timeout_seconds:
// train_gpt's --timeout, TRIDENT_TIMEOUT, default 600 s) fires the watchdog on its rank:
//  1. The rank sends an announcement to every other rank on a side channel: a duplicate of
//     MPI_COMM_WORLD made by Environment, so that no message of the program can match it. It
//     says what the rank waits for (operation, group, sequence number, peer, step, microbatch)
//     and how many collectives it started on each of its groups (flight_recorder.hpp).
//  2. Every other rank that is itself waiting probes the side channel (after 50 ms of a wait,
//     every 10 ms): on an announcement it fires at once. So the ranks stuck in one hang fire
//     together, within milliseconds of the first, and not each after its own timeout.
//  3. Each firing rank collects the announcements for at most 2 s (less when every rank has
//     answered), prints what it waits for, which members of that group did not arrive and its
//     last 64 calls, then waits 1 s more, so that the other ranks' reports get out, and ends the
//     job with MPI_Abort (status 3).
// Nothing here can hang: sends are nonblocking and never waited for, receives follow a
// successful probe of a small message, and every loop has a deadline. A rank that does not
// answer (computing, finished, killed, or inside an MPI call of its own) is named as such.
// Not covered: calls that block inside MPI with no nonblocking form trident uses (MPI_Comm_split
// when a mesh is built, MPI_Finalize), and WaitPolicy::block.
// Missing members: a collective #k of a group (flight_recorder.hpp) has arrived from a member
// that started at least k collectives on that group; any other member is missing.
#pragma once

#include <mpi.h>
#include <sched.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "error.hpp"
#include "flight_recorder.hpp"
#include "message_tags.hpp"

namespace trident {

// What a wait waits for (the flight recorder's entry of its call).
struct Waiting {
  CommOp op = CommOp::barrier;
  const GroupRecord* group = nullptr;
  int peer = -1;                             // group rank of the peer or root, -1 for none
  std::uint64_t record = ~std::uint64_t(0);  // the flight recorder's id of the call
};

namespace watchdog {

// The side channel (set by Environment; MPI_COMM_NULL: reports stay local).
inline MPI_Comm& channel() {
  static MPI_Comm comm = MPI_COMM_NULL;
  return comm;
}
constexpr double kPollAfter = 0.05, kPollEvery = 0.01, kCollect = 2.0, kLinger = 1.0;

// An announcement: this fixed part, then `groups` pairs (key, collectives started).
struct Announcement {
  int rank = -1, op = 0, peer = -1, step = -1, microbatch = -1, groups = 0;  // peer: world rank
  char group[16] = {};
  std::uint64_t key = 0, sequence = 0;
  double waited = 0;
};
struct Heard {
  Announcement a;
  std::map<std::uint64_t, std::uint64_t> started;  // group key -> collectives started
};

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}
inline int peer_world_rank(const Waiting& w) {
  return w.group && w.peer >= 0 && w.peer < int(w.group->world_ranks.size())
             ? w.group->world_ranks[std::size_t(w.peer)]
             : -1;
}

// Receives one announcement if one is waiting; never blocks on a message not yet there.
inline bool receive(std::map<int, Heard>& heard) {
  const MPI_Comm c = channel();
  int flag = 0;
  MPI_Status st;
  if (c == MPI_COMM_NULL ||
      MPI_Iprobe(MPI_ANY_SOURCE, message_tags::kWatchdog, c, &flag, &st) != MPI_SUCCESS || !flag)
    return false;
  int bytes = 0;
  MPI_Get_count(&st, MPI_BYTE, &bytes);
  std::vector<char> buf(std::size_t(std::max(bytes, 0)));
  MPI_Recv(buf.data(), bytes, MPI_BYTE, st.MPI_SOURCE, message_tags::kWatchdog, c,
           MPI_STATUS_IGNORE);
  if (buf.size() < sizeof(Announcement)) return true;
  Heard h;
  std::memcpy(&h.a, buf.data(), sizeof(Announcement));
  const std::size_t pairs = (buf.size() - sizeof(Announcement)) / (2 * sizeof(std::uint64_t));
  for (std::size_t i = 0; i < pairs; ++i) {
    std::uint64_t kv[2];
    std::memcpy(kv, buf.data() + sizeof(Announcement) + i * sizeof(kv), sizeof(kv));
    h.started[kv[0]] = kv[1];
  }
  heard[h.a.rank] = h;
  return true;
}

// Pending announcements of other ranks (kept until the report).
inline std::map<int, Heard>& inbox() {
  static std::map<int, Heard> heard;
  return heard;
}

// True when another rank's watchdog has fired (called by long waits).
inline bool alarm_heard() {
  return receive(inbox()) || !inbox().empty();
}

inline std::string describe(const Announcement& a) {
  std::string s = std::string(to_string(CommOp(a.op))) + " on '" + a.group + "'";
  if (a.sequence) s += " #" + std::to_string(a.sequence);
  if (a.peer >= 0)
    s += std::string(a.sequence ? " (root: rank " : " (peer: rank ") + std::to_string(a.peer) + ")";
  return s + ", step " + std::to_string(a.step) + ", microbatch " + std::to_string(a.microbatch);
}

// The report of this rank, every line prefixed by "[rank R] ".
inline std::string report(const Announcement& me, const Waiting& w,
                          const std::map<int, Heard>& heard, double now, bool own_timeout) {
  const std::string tag = "[rank " + std::to_string(me.rank) + "] ";
  char line[320];
  std::snprintf(line, sizeof line, "trident watchdog: waited %.2f s (%s) for ", me.waited,
                own_timeout ? "its timeout" : "another rank's watchdog fired");
  std::string out = tag + line + describe(me) + "\n";
  if (w.group) {
    out += tag + "group '" + w.group->name + "' is world ranks";
    for (int r : w.group->world_ranks) out += " " + std::to_string(r);
    out += "\n";
    std::vector<int> members;
    const int peer = peer_world_rank(w);
    if (me.sequence == 0 && peer >= 0) members.push_back(peer);  // point-to-point: the peer
    if (me.sequence > 0)
      for (int r : w.group->world_ranks)
        if (r != me.rank) members.push_back(r);
    std::string missing, silent;
    for (int r : members) {
      auto it = heard.find(r);
      if (it == heard.end()) {
        silent += " " + std::to_string(r);
        continue;
      }
      const Heard& h = it->second;
      const auto c = h.started.find(w.group->key);
      const std::uint64_t started = c == h.started.end() ? 0 : c->second;
      if (me.sequence > 0 && started >= me.sequence) continue;  // it arrived
      missing += " " + std::to_string(r);
      out += tag + "  rank " + std::to_string(r) +
             (me.sequence > 0 ? " started " + std::to_string(started) + " collectives on '" +
                                    w.group->name + "' and"
                              : std::string()) +
             " waits for " + describe(h.a) + "\n";
    }
    out += tag + "missing from " + to_string(w.op) + " on group '" + w.group->name +
           "':" + (missing.empty() ? std::string(" none that answered") : " rank" + missing) + "\n";
    if (!silent.empty())
      out += tag + "no answer (not in a communication wait: computing, finished or dead): rank" +
             silent + "\n";
  }
  out += tag + "last calls, oldest first; times in s before this report, * = pending:\n";
  out += tag + "  op             group   peer       bytes  seq#   step    mb     start       end\n";
  for (const CallRecord& r : flight_recorder().recent()) {
    char peer[16] = "-", end[16] = "*";
    if (r.peer >= 0) std::snprintf(peer, sizeof peer, "%d", r.peer);
    if (r.end > 0) std::snprintf(end, sizeof end, "%.3f", r.end - now);
    std::snprintf(line, sizeof line, "%s  %-14s %-6s %5s %11llu %5llu %6d %5d %9.3f %9s%s\n",
                  tag.c_str(), to_string(r.op), r.group ? r.group->name.c_str() : "?", peer,
                  (unsigned long long)r.bytes, (unsigned long long)r.sequence, r.step, r.microbatch,
                  r.start - now, end, r.skipped ? "  SKIPPED (fault injection)" : "");
    out += line;
  }
  return out;
}

// Fires the watchdog of this rank for wait `w` after `waited` seconds (own_timeout: its own
// deadline passed; else another rank's announcement came): announce, collect, report, abort.
[[noreturn]] inline void fire(const Waiting& w, double waited, bool own_timeout) {
  const int me = world_rank(), n = world_size();
  Announcement a;
  a.rank = me;
  a.op = int(w.op);
  a.peer = peer_world_rank(w);
  if (const CallRecord* r = flight_recorder().find(w.record)) {
    a.sequence = r->sequence;
    a.step = r->step;
    a.microbatch = r->microbatch;
  }
  if (w.group) {
    std::strncpy(a.group, w.group->name.c_str(), sizeof a.group - 1);
    a.key = w.group->key;
  }
  a.waited = waited;
  a.groups = int(flight_recorder().groups().size());
  std::vector<char> message(sizeof a);
  std::memcpy(message.data(), &a, sizeof a);
  for (const auto& [key, g] : flight_recorder().groups()) {
    const std::uint64_t kv[2] = {key, g.collectives};
    message.insert(message.end(), reinterpret_cast<const char*>(kv),
                   reinterpret_cast<const char*>(kv) + sizeof kv);
  }
  std::vector<MPI_Request> sends;  // never waited for: MPI_Abort ends them
  if (channel() != MPI_COMM_NULL)
    for (int r = 0; r < n; ++r)
      if (r != me) {
        sends.emplace_back(MPI_REQUEST_NULL);
        MPI_Isend(message.data(), int(message.size()), MPI_BYTE, r, message_tags::kWatchdog,
                  channel(), &sends.back());
      }
  std::map<int, Heard>& heard = inbox();
  const timespec nap{0, 1000000};
  for (const double until = detail::now_seconds() + kCollect;
       channel() != MPI_COMM_NULL && int(heard.size()) < n - 1 && detail::now_seconds() < until;) {
    if (!receive(heard)) nanosleep(&nap, nullptr);
    int flag = 0;
    if (!sends.empty()) MPI_Testall(int(sends.size()), sends.data(), &flag, MPI_STATUSES_IGNORE);
  }
  const std::string text = report(a, w, heard, detail::now_seconds(), own_timeout);
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  const timespec linger{long(kLinger), 0};
  nanosleep(&linger, nullptr);
  MPI_Abort(MPI_COMM_WORLD, 3);
  std::_Exit(3);
}

}  // namespace watchdog
}  // namespace trident
