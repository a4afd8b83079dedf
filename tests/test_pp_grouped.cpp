// NCCL's grouped point-to-point (pp/grouped_p2p.hpp): which schedules can move their messages
// with each run of sends and receives as one group, matched in order between each pair of
// ranks, without waiting on each other. GPipe, 1F1B, ZB-H1 and the forward-only schedule can,
// for p <= 8 and m <= 16; interleaved 1F1B and ZB-V cannot everywhere (their order of messages
// between two ranks differs, or their groups wait for each other), and say why; two hand-made
// lists show each failure.
#include <trident/pp/grouped_p2p.hpp>
#include <trident/pp/schedule.hpp>

#include "mpi_test.hpp"

using namespace trident;
using namespace trident::pp;

namespace {
std::string problem(ScheduleKind kind, int p, int m, int v = 1) {
  const ScheduleSpec spec{kind, p, m, v};
  return grouped_p2p_problem(make_schedule(spec), chunk_map(spec));
}
}  // namespace

TEST_CASE("grouped p2p: GPipe, 1F1B, ZB-H1 and forward-only run on NCCL's rules, p <= 8") {
  int checked = 0;
  for (ScheduleKind k : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::zb_h1,
                         ScheduleKind::forward_only})
    for (int p = 1; p <= 8; ++p)
      for (int m = 1; m <= 16; ++m) {
        if (k == ScheduleKind::zb_h1 && m < p) continue;  // ZB-H1 needs m >= p
        INFO(to_string(k) << " p=" << p << " m=" << m);
        CHECK(problem(k, p, m) == "");
        ++checked;
      }
  CHECK(checked > 400);
}

TEST_CASE("grouped p2p: interleaved and ZB-V are refused where they would fail, with the reason") {
  CHECK(problem(ScheduleKind::interleaved, 2, 2, 2) == "");
  const std::string wait = problem(ScheduleKind::interleaved, 2, 4, 2);
  CHECK(wait.find("the stages' groups of sends and receives wait for each other") == 0);
  const std::string order = problem(ScheduleKind::zbv, 2, 4, 2);
  CHECK(order.find("stage 0 sends to stage 1 in another order than stage 1 receives") == 0);
}

TEST_CASE("grouped p2p: a pair's messages out of order, and two sends waiting, are caught") {
  const ChunkMap map{ChunkPlacement::looped, 2, 1};
  // stage 0 sends microbatch 1 before 0; stage 1 receives 0 first: NCCL would swap them
  const std::vector<std::vector<Action>> swapped = {
      {{Op::forward, 0, 0, -1},
       {Op::forward, 1, 0, -1},
       {Op::send_forward, 1, 0, 1},
       {Op::send_forward, 0, 0, 1}},
      {{Op::recv_forward, 0, 0, 0}, {Op::recv_forward, 1, 0, 0}}};
  CHECK(grouped_p2p_problem(swapped, map).find("in another order") != std::string::npos);
  // each stage sends to the other in a group before its receive's group: both wait forever
  const std::vector<std::vector<Action>> crossed = {
      {{Op::send_forward, 0, 0, 1}, {Op::forward, 1, 0, -1}, {Op::recv_backward, 0, 0, 1}},
      {{Op::send_backward, 0, 0, 0}, {Op::forward, 2, 0, -1}, {Op::recv_forward, 0, 0, 0}}};
  CHECK(grouped_p2p_problem(crossed, map).find("wait for each other") != std::string::npos);
}
