// trident/train/waits.hpp: who made whom wait. Each rank's time in a step splits into compute,
// exposed communication and waiting, and each wait is attributed to the rank that arrived last,
// per group (tp, cp, pp, dp, the embedding's): the answer to "which rank, which axis" that
// Megatron's straggler detector and torchtitan's overlap analysis give in their own ways.
//
// The flight recorder (core/flight_recorder.hpp) stamps every call of the step: posted (the call
// started on this rank), blocked_from (this rank began to wait for it: at once for a blocking
// call, at Request::wait for a nonblocking one) and end. The stamps of all ranks are gathered on
// world rank 0 and matched: a collective by its group and sequence number, where the member that
// posted last is the one the others waited for; a message by its group, source, destination,
// tag and count, where a receive waits for its send's post and a send (a rendezvous) for its
// receive's. A call's waiting is the part of its blocked time before the awaited post; the rest
// is exposed communication, the transfer itself. Compute is the timeline's forward and backward
// passes and the optimizer, less the calls blocked inside them; the step's time not in the three
// is shown as other. Stamps move onto world rank 0's clock by offsets estimated at the start
// (clock_offset: the midpoint of the fastest of 8 round trips with rank 0).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "../core/comm.hpp"
#include "../core/flight_recorder.hpp"
#include "../core/message_tags.hpp"

namespace trident {

// The groups waits are counted in; a communicator of another name counts as "other".
inline constexpr int kWaitGroups = 7;
inline const char* wait_group_name(int g) {
  constexpr const char* names[kWaitGroups] = {"tp", "cp", "pp", "dp", "emb", "world", "other"};
  return names[g];
}
inline int wait_group(const std::string& name) {
  if (name == "dp_cp") return 3;  // the gradient reduction under CP is DP's
  for (int g = 0; g < kWaitGroups - 1; ++g)
    if (name == wait_group_name(g)) return g;
  return kWaitGroups - 1;
}

// One call of one rank, on world rank 0's clock.
struct CallStamp {
  int rank = 0, group = 0;  // world rank; wait_group()
  int peer = -1;            // a message's other end, world rank; -1 for a collective
  std::uint64_t match = 0;  // equal on every rank's stamp of the same call
  double posted = 0, blocked_from = 0, end = 0;
};

// One rank's time, summed over the steps attributed.
struct RankWaits {
  double step = 0, compute = 0, exposed = 0, waiting = 0;
  double injected = 0;             // the slow fault's sleeps (core/fault.hpp), included in compute
  std::vector<double> waited_for;  // [group * ranks + r]: seconds this rank waited in group for r
  double other() const { return step - compute - exposed - waiting; }
};

namespace waits_detail {
// Splits a call's blocked time at the post it waited for: (waiting, exposed).
inline std::pair<double, double> split(const CallStamp& s, double awaited_post) {
  const double blocked = std::max(0.0, s.end - s.blocked_from);
  const double waiting = std::clamp(awaited_post - s.blocked_from, 0.0, blocked);
  return {waiting, blocked - waiting};
}
}  // namespace waits_detail

// Attributes one step's stamps (every rank's) into `out` (one entry per world rank, waited_for
// sized kWaitGroups x ranks). A call whose other side is missing counts as exposed.
inline void attribute_waits(const std::vector<CallStamp>& stamps, std::vector<RankWaits>& out) {
  const int ranks = static_cast<int>(out.size());
  std::map<std::uint64_t, std::vector<const CallStamp*>> calls;
  for (const CallStamp& s : stamps) calls[s.match].push_back(&s);
  for (const auto& [match, members] : calls) {
    for (const CallStamp* s : members) {
      // the awaited post: the last member's (a collective), the other end's (a message)
      const CallStamp* awaited = nullptr;
      for (const CallStamp* o : members)
        if (o != s &&
            (s->peer < 0 ? (!awaited || o->posted > awaited->posted) : o->rank == s->peer))
          awaited = o;
      if (s->peer < 0 && awaited && awaited->posted < s->posted) awaited = nullptr;  // s was last
      RankWaits& w = out[std::size_t(s->rank)];
      const auto [waiting, exposed] = waits_detail::split(*s, awaited ? awaited->posted : 0.0);
      w.exposed += awaited ? exposed : waiting + exposed;
      if (!awaited) continue;
      w.waiting += waiting;
      w.waited_for[std::size_t(s->group * ranks + awaited->rank)] += waiting;
    }
  }
}

// This rank's clock minus world rank 0's: the midpoint of the fastest of 8 round trips with
// rank 0, on a communicator of their own. Collective.
inline double clock_offset(const Comm& world) {
  const Comm clock = world.split(0, world.rank(), "clock");
  double offset = 0;
  for (int r = 1; r < clock.size(); ++r) {
    if (clock.rank() != 0 && clock.rank() != r) continue;
    double fastest = 1e300, best = 0, t = 0;
    for (int k = 0; k < 8; ++k) {
      if (clock.rank() == 0) {
        const double sent = detail::now_seconds();
        clock.send(Span<const double>(&t, 1), r, message_tags::kClock);
        clock.recv(Span<double>(&t, 1), r, message_tags::kClock);  // r's clock
        const double back = detail::now_seconds();
        if (back - sent < fastest) {
          fastest = back - sent;
          best = t - (sent + back) / 2;
        }
      } else {
        clock.recv(Span<double>(&t, 1), 0, message_tags::kClock);
        t = detail::now_seconds();
        clock.send(Span<const double>(&t, 1), 0, message_tags::kClock);
      }
    }
    if (clock.rank() == 0)
      clock.send(Span<const double>(&best, 1), r, message_tags::kClock);
    else
      clock.recv(Span<double>(&offset, 1), 0, message_tags::kClock);
  }
  return offset;
}

}  // namespace trident
