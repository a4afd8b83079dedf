// The watchdog's parts that can be checked without ending the job: the fault specification
// (core/fault.hpp), the flight recorder's ring and sequence numbers, the group keys every
// member computes alike (core/flight_recorder.hpp), and the timeout check (core/request.hpp).
// The watchdog firing on a real hang is tested end to end by cli.fault.skip_collective*.
#include <cmath>
#include <cstdint>
#include <vector>

#include <trident/core/comm.hpp>
#include <trident/core/fault.hpp>
#include <trident/train/waits.hpp>

#include "mpi_test.hpp"

using namespace trident;

TEST_CASE("TRIDENT_FAULT specifications parse, and malformed ones are errors") {
  const fault::Spec full = fault::detail::parse("skip-collective:rank=1:step=2");
  CHECK(full.kind == "skip-collective");
  CHECK(full.rank == 1);
  CHECK(full.step == 2);
  const fault::Spec bare = fault::detail::parse("nan-loss:step=7");
  CHECK(bare.kind == "nan-loss");
  CHECK(bare.rank == -1);
  CHECK(bare.step == 7);
  CHECK_THROWS_AS(fault::detail::parse("nan-loss:rank=x"), Error);
  CHECK_THROWS_AS(fault::detail::parse("nan-loss:rank=-1"), Error);
  CHECK_THROWS_AS(fault::detail::parse("nan-loss:when=3"), Error);
  CHECK_THROWS_AS(fault::detail::parse(":rank=1"), Error);
  CHECK_THROWS_AS(fault::detail::parse("nan-loss:rank"), Error);
  CHECK_FALSE(fault::armed("no-such-fault", 0, 0));  // the tests run without TRIDENT_FAULT
}

TEST_CASE("the flight recorder keeps the last 64 calls and numbers collectives per group") {
  FlightRecorder recorder;  // a private one: the process-wide recorder keeps recording
  GroupRecord* world = recorder.group(MPI_COMM_WORLD, "world");
  GroupRecord* other = recorder.group(MPI_COMM_WORLD, "other");
  CHECK(world != other);
  CHECK(recorder.group(MPI_COMM_WORLD, "world") == world);  // registered once
  recorder.set_step(3);
  recorder.set_microbatch(1);
  const std::uint64_t first = recorder.begin(CommOp::all_reduce, world, -1, 8, 1.0);
  recorder.end(first, 2.0);
  recorder.begin(CommOp::send, world, 1, 16, 3.0);                       // no sequence number
  recorder.begin(CommOp::barrier, world, -1, 0, 4.0, /*skipped=*/true);  // numbered, not counted
  recorder.begin(CommOp::broadcast, other, 0, 4, 5.0);
  const std::vector<CallRecord> calls = recorder.recent();
  REQUIRE(calls.size() == 4);
  CHECK(calls[0].sequence == 1);
  CHECK(calls[0].end == 2.0);
  CHECK(calls[0].step == 3);
  CHECK(calls[0].microbatch == 1);
  CHECK(calls[1].sequence == 0);
  CHECK(calls[1].peer == 1);
  CHECK(calls[2].sequence == 2);
  CHECK(calls[2].skipped);
  CHECK(calls[3].sequence == 1);   // its own group's first
  CHECK(world->collectives == 1);  // the skipped barrier was never posted
  CHECK(other->collectives == 1);

  for (int i = 0; i < 100; ++i) recorder.begin(CommOp::all_reduce, world, -1, i, 10.0 + i);
  const std::vector<CallRecord> last = recorder.recent();
  REQUIRE(last.size() == FlightRecorder::kCapacity);
  CHECK(last.front().bytes == 100 - 64);  // the oldest kept
  CHECK(last.back().bytes == 99);
  CHECK(last.back().sequence == 101);
  recorder.end(first, 99.0);  // long gone from the ring: ignored
  CHECK(recorder.find(first) == nullptr);
}

TEST_CASE("every member of a group computes the same key; other groups differ") {
  TRIDENT_RANKS(4, comm);
  const Comm pair = comm.split(comm.rank() / 2, comm.rank(), "pair");
  const std::uint64_t key = flight_recorder().group(pair.get(), pair.name())->key;
  std::vector<std::uint64_t> keys(4);
  comm.all_gather(Span<const std::uint64_t>(&key, 1), Span<std::uint64_t>(keys));
  CHECK(keys[0] == keys[1]);
  CHECK(keys[2] == keys[3]);
  CHECK(keys[0] != keys[2]);
  CHECK(flight_recorder().group(pair.get(), "renamed")->key != key);
}

TEST_CASE("a Comm records each call: op, group, bytes, sequence, start and end") {
  TRIDENT_RANKS(2, comm);
  GroupRecord* group = flight_recorder().group(comm.get(), comm.name());
  const std::uint64_t before = group->collectives;
  std::vector<double> v(5, 1.0);
  comm.all_reduce(Span<double>(v));
  const CallRecord last = flight_recorder().recent().back();
  CHECK(last.op == CommOp::all_reduce);
  CHECK(last.group == group);
  CHECK(last.bytes == 5 * sizeof(double));
  CHECK(last.sequence == before + 1);
  CHECK(last.end >= last.start);
  CHECK(group->collectives == before + 1);
}

TEST_CASE("a timeout is a number of seconds > 0") {
  CHECK(checked_timeout(0.5, "--timeout") == 0.5);
  CHECK_THROWS_AS(checked_timeout(0, "--timeout"), Error);
  CHECK_THROWS_AS(checked_timeout(-1, "--timeout"), Error);
  CHECK_THROWS_AS(checked_timeout(std::nan(""), "--timeout"), Error);
  CHECK_THROWS_AS(checked_timeout(HUGE_VAL, "--timeout"), Error);
  CHECK(wait_tuning().timeout_seconds > 0);
}

TEST_CASE(
    "waits: a collective's wait goes to the member that posted last, a message's to its other "
    "end") {
  // world ranks 0 and 1; a TP all-reduce, a pipeline message from 1 to 0, and a collective whose
  // other member's stamp is missing (all of it exposed)
  std::vector<CallStamp> stamps;
  const int tp = wait_group("tp"), pp = wait_group("pp");
  stamps.push_back({0, tp, -1, 11, 0.00, 0.00, 0.11});  // waits 0.10 for rank 1
  stamps.push_back({1, tp, -1, 11, 0.10, 0.10, 0.11});  // last: 0.01 exposed
  stamps.push_back({1, pp, 0, 22, 0.20, 0.20, 0.20});   // an eager send: nothing blocked
  stamps.push_back({0, pp, 1, 22, 0.00, 0.15, 0.21});   // posted early, waits from 0.15
  stamps.push_back({1, wait_group("dp"), -1, 33, 0.30, 0.30, 0.32});
  std::vector<RankWaits> w(2);
  for (RankWaits& r : w) r.waited_for.assign(kWaitGroups * 2, 0.0);
  attribute_waits(stamps, w);
  CHECK(w[0].waited_for[std::size_t(tp * 2 + 1)] == doctest::Approx(0.10));
  CHECK(w[0].waited_for[std::size_t(pp * 2 + 1)] == doctest::Approx(0.05));
  CHECK(w[0].waiting == doctest::Approx(0.15));
  CHECK(w[0].exposed == doctest::Approx(0.02));  // 0.01 of the all-reduce, 0.01 of the message
  CHECK(w[1].waiting == 0);
  CHECK(w[1].exposed == doctest::Approx(0.03));  // 0.01 + the unmatched 0.02
  CHECK(wait_group("dp_cp") == wait_group("dp"));
  CHECK(std::string(wait_group_name(wait_group("mp"))) == "other");
}

TEST_CASE("waits: the clock offset of ranks sharing one clock is below a millisecond") {
  TRIDENT_RANKS(2, comm);
  CHECK(std::abs(clock_offset(comm)) < 1e-3);
}
