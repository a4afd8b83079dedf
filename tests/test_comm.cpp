// Comm: typed collectives against values computed by hand, CommStats against the documented
// convention, MPI errors as exceptions, and agree().
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#include <trident/core/comm.hpp>
#include <trident/core/environment.hpp>

#include "mpi_test.hpp"

using namespace trident;

TEST_CASE("all_reduce sums in place, in double, float and int, under both wait policies") {
  TRIDENT_RANKS(2, comm);
  const int n = comm.size();
  for (WaitPolicy policy : {WaitPolicy::test_yield, WaitPolicy::block}) {
    wait_policy() = policy;
    std::vector<double> d(5, comm.rank() + 0.5);
    comm.all_reduce(Span<double>(d));
    for (double x : d) CHECK(x == doctest::Approx(n * (n - 1) / 2.0 + 0.5 * n));
    std::vector<float> f(3, 1.0f);
    comm.all_reduce(Span<float>(f));
    CHECK(f[2] == static_cast<float>(n));
    CHECK(comm.all_reduce_value(comm.rank(), ReduceOp::max) == n - 1);
    CHECK(comm.all_reduce_value(comm.rank() + 3, ReduceOp::min) == 3);
  }
  wait_policy() = WaitPolicy::test_yield;
}

TEST_CASE("test_yield completes a late partner's message after it stops yielding and naps") {
  TRIDENT_RANKS(2, comm);
  const WaitTuning saved = wait_tuning();
  wait_tuning().yield_seconds = 0;  // point-to-point waits nap from the first test on
  std::vector<double> v(1000, comm.rank() == 0 ? 2.5 : 0.0);
  if (comm.rank() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    comm.send(Span<const double>(v), 1, 7);
  } else if (comm.rank() == 1) {
    comm.recv(Span<double>(v), 0, 7);
    CHECK(v.front() == 2.5);
    CHECK(v.back() == 2.5);
  }
  comm.barrier();
  wait_tuning() = saved;
}

TEST_CASE("reduce_scatter, all_gather and all_gather_in_place agree with their definitions") {
  TRIDENT_RANKS(4, comm);
  const int n = comm.size(), r = comm.rank(), k = 3;
  std::vector<double> in(n * k), out(k);
  for (int i = 0; i < n * k; ++i) in[i] = 100.0 * r + i;  // rank r contributes 100 r + i
  comm.reduce_scatter<double>(in, out);
  const double rank_sum = 100.0 * n * (n - 1) / 2;
  for (int j = 0; j < k; ++j) CHECK(out[j] == rank_sum + n * (r * k + j));

  std::vector<double> shard(k, r), full(n * k, -1);
  comm.all_gather<double>(shard, full);
  for (int i = 0; i < n * k; ++i) CHECK(full[i] == i / k);

  std::vector<double> buf(n * k, -1);
  for (int j = 0; j < k; ++j) buf[r * k + j] = 10.0 * r + j;
  comm.iall_gather_in_place(Span<double>(buf)).wait();
  for (int i = 0; i < n * k; ++i) CHECK(buf[i] == 10.0 * (i / k) + i % k);
}

TEST_CASE("broadcast, reduce and point-to-point around a ring") {
  TRIDENT_RANKS(2, comm);
  const int n = comm.size(), r = comm.rank();
  std::vector<int> b(4, r == 1 ? 7 : 0);
  comm.broadcast(Span<int>(b), 1);
  CHECK(b == std::vector<int>(4, 7));

  std::vector<double> mine(2, r + 1.0), total(2, 0);
  comm.reduce<double>(mine, total, 0);
  if (r == 0) CHECK(total[1] == n * (n + 1) / 2.0);

  std::vector<double> out(3, r), in(3, -1);
  Request recv = comm.irecv(Span<double>(in), (r + n - 1) % n, 5);
  Request send = comm.isend(Span<const double>(out), (r + 1) % n, 5);
  recv.wait();
  send.wait();
  CHECK(in[0] == (r + n - 1) % n);
}

TEST_CASE("CommStats counts calls and whole-buffer bytes per communicator and operation") {
  TRIDENT_RANKS(2, base);
  const Comm comm = base.dup("counted");
  const int n = comm.size();
  comm_stats().reset();
  std::vector<float> a(10), shard(4), full(4 * n);
  comm.all_reduce(Span<float>(a));
  comm.all_reduce(Span<float>(a));
  comm.all_gather<float>(shard, full);
  comm.reduce_scatter<float>(full, shard);
  const CommCounts c = comm_stats().of("counted");
  CHECK(c.group_size == n);
  CHECK(c[CommOp::all_reduce].calls == 2);
  CHECK(c[CommOp::all_reduce].bytes == 2 * 10 * sizeof(float));
  CHECK(c[CommOp::all_gather].bytes == 4 * n * sizeof(float));      // the full output
  CHECK(c[CommOp::reduce_scatter].bytes == 4 * n * sizeof(float));  // the full input
  CHECK(c.paper_volume() == 2 * 80 + 2 * 16 * n);
  CHECK(comm_stats().of("never-used").total().calls == 0);
}

TEST_CASE("bf16 all_reduce sums in float and rounds once per step") {
  TRIDENT_RANKS(2, comm);
  std::vector<bf16> v(8, bf16(0.25f));
  comm.all_reduce(Span<bf16>(v));
  CHECK(static_cast<float>(v[7]) == 0.25f * comm.size());
  CHECK(static_cast<float>(bf16(1.0f + 1.0f / 256)) == 1.0f);  // 8 bits of mantissa: tie to even
  CHECK(static_cast<float>(bf16(3.0f)) == 3.0f);
}

TEST_CASE("an MPI error becomes an MpiError with MPI's error string and the rank") {
  TRIDENT_RANKS(1, comm);
  std::vector<double> x(1);
  try {
    comm.send(Span<const double>(x), /*dest=*/comm.size() + 3, 0);
    FAIL("sending to a rank outside the communicator did not throw");
  } catch (const MpiError& e) {
    const std::string what = e.what();
    CHECK(what.find("send failed on rank") != std::string::npos);
    CHECK(what.find("rank") != std::string::npos);
    CHECK(e.code() != MPI_SUCCESS);
  }
}

TEST_CASE("agree() turns one rank's failure into the same error on every rank") {
  TRIDENT_RANKS(2, comm);
  const bool ok = comm.rank() != comm.size() - 1;
  std::string seen;
  try {
    agree(comm, ok, "cannot read data.txt on rank " + std::to_string(comm.rank()));
  } catch (const Error& e) {
    seen = e.what();
  }
  CHECK(seen == "cannot read data.txt on rank " + std::to_string(comm.size() - 1));
  CHECK_NOTHROW(agree(comm, true, "unused"));
}
