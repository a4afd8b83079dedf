// trident/pp/grouped_p2p.hpp: whether a schedule can move its messages by NCCL's point-to-point.
//
// The executor (executor.hpp) posts every receive of a step up front and tells messages apart by
// tag: that is MPI's model. NCCL's differs in two ways: messages between two ranks carry no tag
// and are matched in the order they are posted, and a send completes only when its receive is
// posted (a rendezvous), the sends and receives posted together between ncclGroupStart and
// ncclGroupEnd progressing together. So on the nccl path the executor posts each run of
// consecutive sends and receives of its list as one group, at its place in the list, and the
// schedule must (1) send from each rank to each other rank in the order the other receives, and
// (2) not deadlock when every group waits for all its partners to be posted. Both are checked
// here on the whole schedule, before a step runs; a schedule that fails either takes host
// staging for its pipeline traffic instead (train/device_groups.hpp), with the reason.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "simulate.hpp"

namespace trident::pp {

namespace grouped_detail {
using Schedule = std::vector<std::vector<Action>>;

// The first action of the group of consecutive sends and receives holding action i.
inline std::vector<std::vector<std::size_t>> group_starts(const Schedule& schedule) {
  std::vector<std::vector<std::size_t>> starts(schedule.size());
  for (std::size_t s = 0; s < schedule.size(); ++s) {
    const auto& list = schedule[s];
    starts[s].resize(list.size());
    for (std::size_t i = 0; i < list.size(); ++i)
      starts[s][i] =
          (i > 0 && !is_compute(list[i].op) && !is_compute(list[i - 1].op)) ? starts[s][i - 1] : i;
  }
  return starts;
}

// For each send and receive, where its partner is: (stage, index). Empty string, or why the
// order of some pair's messages differs between sender and receiver.
inline std::string partners(const Schedule& schedule, const ChunkMap& map,
                            std::map<std::pair<int, std::size_t>, std::pair<int, std::size_t>>& p) {
  using Message = detail::Message;
  std::map<std::pair<int, int>, std::vector<std::pair<Message, std::size_t>>> sent, received;
  for (int s = 0; s < int(schedule.size()); ++s)
    for (std::size_t i = 0; i < schedule[s].size(); ++i) {
      const Action& a = schedule[s][i];
      if (is_send(a.op)) sent[{s, a.peer}].push_back({detail::message_of(a, s, map), i});
      if (is_recv(a.op)) received[{a.peer, s}].push_back({detail::message_of(a, s, map), i});
    }
  for (const auto& [pair, sends] : sent) {
    const auto& recvs = received[pair];
    for (std::size_t k = 0; k < sends.size(); ++k) {
      if (k >= recvs.size() || recvs[k].first != sends[k].first)
        return "stage " + std::to_string(pair.first) + " sends to stage " +
               std::to_string(pair.second) + " in another order than stage " +
               std::to_string(pair.second) +
               " receives: " + detail::describe(schedule, pair.first, sends[k].second) +
               " is its message " + std::to_string(k) + " on that pair";
      p[{pair.first, sends[k].second}] = {pair.second, recvs[k].second};
      p[{pair.second, recvs[k].second}] = {pair.first, sends[k].second};
    }
  }
  return "";
}
}  // namespace grouped_detail

// Empty when the schedule (every stage's list; map: where its chunks sit) runs on NCCL's
// point-to-point with each run of sends and receives as one group; else the first reason not.
inline std::string grouped_p2p_problem(const std::vector<std::vector<Action>>& schedule,
                                       const ChunkMap& map) {
  namespace g = grouped_detail;
  std::map<std::pair<int, std::size_t>, std::pair<int, std::size_t>> partner;
  if (std::string why = g::partners(schedule, map, partner); !why.empty()) return why;
  const auto start = g::group_starts(schedule);
  const int stages = int(schedule.size());
  std::vector<std::size_t> at(stages, 0);  // each stage's next action
  for (bool moved = true; moved;) {
    moved = false;
    for (int s = 0; s < stages; ++s)
      while (at[s] < schedule[s].size()) {
        std::size_t end = at[s];  // the group from at[s], or one compute action
        if (is_compute(schedule[s][end].op)) {
          ++end;
        } else {
          while (end < schedule[s].size() && start[s][end] == at[s]) ++end;
          bool posted = true;  // every partner's group posted (its stage reached it)
          for (std::size_t i = at[s]; i < end && posted; ++i) {
            const auto [t, k] = partner.at({s, i});
            posted = at[t] >= start[t][k];
          }
          if (!posted) break;
        }
        at[s] = end;
        moved = true;
      }
  }
  for (int s = 0; s < stages; ++s)
    if (at[s] < schedule[s].size())
      return "the stages' groups of sends and receives wait for each other: " +
             detail::describe(schedule, s, at[s]) + " never completes";
  return "";
}

}  // namespace trident::pp
