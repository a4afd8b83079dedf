// Comm: typed collectives against values computed by hand, CommStats against the documented
// convention, MPI errors as exceptions, and agree(); the shared-memory path against MPI's path
// (exact on integer-valued data) and against the rank-order sum (bitwise); the all-to-all with
// variable counts against the blocks every rank knows the others send, on every path.
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include <trident/backend/device_comm.hpp>
#include <trident/backend/emulated/emulated.hpp>
#include <trident/core/comm.hpp>
#include <trident/core/environment.hpp>
#include <trident/mesh/mesh.hpp>

#include "all_to_all_testing.hpp"
#include "mpi_test.hpp"
#include "shm_testing.hpp"

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
  std::vector<double> blocking(n * k, -1);
  for (int j = 0; j < k; ++j) blocking[r * k + j] = 10.0 * r + j;
  comm.all_gather_in_place(Span<double>(blocking));
  CHECK(blocking == buf);
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

// --- the shared-memory path (core/shm_collectives.hpp) ---------------------------------------

namespace {

using test::order_sensitive;
using test::with_shm;

// The four collectives on `comm` over n elements per rank (reduce_scatter: n per shard), and
// all_gather in place, integer-valued, by one path; every result concatenated.
template <class T>
std::vector<T> all_four(const Comm& comm, std::size_t n, ReduceOp op) {
  const int p = comm.size(), r = comm.rank();
  std::vector<T> x(n * p), out;
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>((r + 1) * (i % 7) - 3 * r);
  std::vector<T> reduced(x.begin(), x.begin() + n);
  comm.all_reduce(Span<T>(reduced), op);
  std::vector<T> shard(n), gathered(n * p), broadcast(x.begin(), x.begin() + n);
  comm.reduce_scatter<T>(x, shard);
  std::vector<T> mine(n, static_cast<T>(10 * r + 1));
  comm.all_gather<T>(mine, gathered);
  comm.broadcast(Span<T>(broadcast), p - 1);
  std::vector<T> in_place(n * p, static_cast<T>(-1));
  for (std::size_t i = 0; i < n; ++i) in_place[r * n + i] = static_cast<T>(10 * r + i % 5);
  comm.all_gather_in_place(Span<T>(in_place));
  for (const auto* v : {&reduced, &shard, &gathered, &broadcast, &in_place})
    out.insert(out.end(), v->begin(), v->end());
  return out;
}

// Both paths, exactly equal, at sizes not divisible by the group (1 round and many rounds).
template <class T>
void check_paths_equal(const Comm& comm) {
  const std::size_t small_chunk = 64 * comm.size();  // the smallest buffer: many rounds
  for (std::size_t chunk : {std::size_t(1) << 18, small_chunk}) {
    const Comm fresh = comm.dup("shm-test");  // its segment is made with this chunk
    for (std::size_t n : {1, 13, 1001, 4099}) {
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
        std::vector<T> shm, mpi;
        with_shm(
            true, [&] { shm = all_four<T>(fresh, n, op); }, chunk);
        with_shm(false, [&] { mpi = all_four<T>(fresh, n, op); });
        CHECK_MESSAGE(shm == mpi, "n = " << n << ", chunk = " << chunk);
      }
    }
  }
}

template <class T>
void check_rank_order(const Comm& comm) {
  const int p = comm.size();
  const std::size_t n = 3001 * static_cast<std::size_t>(p);  // reduce_scatter: p shards of 3001
  const std::vector<T> x = order_sensitive<T>(n, comm.rank());
  const std::vector<T> expected = test::node_order_sum(comm, x, p);  // x_0 + x_1 + ...
  for (int run = 0; run < 2; ++run) {  // each run bitwise the rank-order sum
    std::vector<T> reduced = x, shard(n / p);
    with_shm(true, [&] {
      comm.all_reduce(Span<T>(reduced));
      comm.reduce_scatter<T>(x, shard);
    });
    CHECK(std::memcmp(reduced.data(), expected.data(), n * sizeof(T)) == 0);
    CHECK(std::memcmp(shard.data(), expected.data() + comm.rank() * (n / p),
                      shard.size() * sizeof(T)) == 0);
  }
}

}  // namespace

TEST_CASE("shared-memory collectives equal MPI's exactly on integer-valued data, odd sizes") {
  const Comm comm = test::world().dup("shm");  // every rank launched: 1, 2, 4 or 8
  check_paths_equal<double>(comm);
  check_paths_equal<float>(comm);
  check_paths_equal<std::int32_t>(comm);
}

TEST_CASE("shared-memory all_reduce and reduce_scatter add in rank order: bitwise, every run") {
  const Comm comm = test::world().dup("shm");
  check_rank_order<double>(comm);
  check_rank_order<float>(comm);
}

TEST_CASE("reduce_in_window: the ranks' arrays summed in place, in rank order, bitwise") {
  const Comm comm = test::world().dup("window");  // every rank launched: 1, 2, 4 or 8
  const int p = comm.size(), r = comm.rank();
  const std::size_t k = 1537, n = k * p, gap = 5;  // two ranges of p shards, a gap between
  const std::vector<double> x = order_sensitive<double>(n, r),
                            y = order_sensitive<double>(n, r + 9);
  const std::vector<double> sx = test::node_order_sum(comm, x, p),
                            sy = test::node_order_sum(comm, y, p);  // x_0 + x_1 + ...
  for (bool all : {true, false}) {
    INFO((all ? "all-reduce" : "reduce-scatter"));
    SharedWindow w(comm.get(), (2 * n + gap) * sizeof(double));
    double* mine = w.of<double>(r);
    std::copy(x.begin(), x.end(), mine);
    std::fill_n(mine + n, gap, -7.0);
    std::copy(y.begin(), y.end(), mine + n + gap);
    comm.reduce_in_window<double>(w, {{0, n}, {n + gap, n}}, all);
    for (int j = 0; j < p; ++j) {
      if (!all && j != r) continue;  // a reduce-scatter leaves each shard with its owner
      const std::size_t at = j * k, bytes = k * sizeof(double);
      CHECK(std::memcmp(mine + at, sx.data() + at, bytes) == 0);
      CHECK(std::memcmp(mine + n + gap + at, sy.data() + at, bytes) == 0);
    }
    CHECK(std::count(mine + n, mine + n + gap, -7.0) == static_cast<long>(gap));  // untouched
  }
}

TEST_CASE("gather_in_window: every rank's shards copied into every array, in place") {
  const Comm comm = test::world().dup("window");  // every rank launched: 1, 2, 4 or 8
  const int p = comm.size(), r = comm.rank();
  const std::size_t k = 1031, n = k * p, gap = 3;  // two ranges of p shards, a gap between
  auto value = [](int owner, std::size_t i) { return 1000.0 * owner + static_cast<double>(i); };
  SharedWindow w(comm.get(), (2 * n + gap) * sizeof(double));
  double* mine = w.of<double>(r);
  std::fill_n(mine, 2 * n + gap, -7.0);  // only this rank's shards hold values
  for (std::size_t base : {std::size_t(0), n + gap})
    for (std::size_t i = 0; i < k; ++i) mine[base + r * k + i] = value(r, base + i);
  comm.gather_in_window<double>(w, {{0, n}, {n + gap, n}});
  std::size_t wrong = 0;
  for (std::size_t base : {std::size_t(0), n + gap})
    for (int j = 0; j < p; ++j)
      for (std::size_t i = 0; i < k; ++i) wrong += mine[base + j * k + i] != value(j, base + i);
  CHECK(wrong == 0);
  CHECK(std::count(mine + n, mine + n + gap, -7.0) == static_cast<long>(gap));  // untouched
}

TEST_CASE("shared-memory collectives on a mesh's TP and DP groups (sub-communicators)") {
  TRIDENT_RANKS(4, comm);
  const Mesh<> mesh(comm, MeshShape{2, 1, comm.size() / 2});
  for (const Comm* group : {&mesh.tp(), &mesh.dp()}) {
    check_paths_equal<double>(*group);
    check_rank_order<double>(*group);
  }
}

TEST_CASE("the shared-memory path counts what MPI's path counts, and Comm takes it when large") {
  TRIDENT_RANKS(2, base);
  const Comm comm = base.dup("counted");
  const int n = comm.size();
  CommCounts counts[2];
  for (bool on : {true, false}) {
    comm_stats().reset();
    with_shm(on, [&] {
      std::vector<float> a(1000), shard(300), full(300 * n);
      comm.all_reduce(Span<float>(a));
      comm.all_gather<float>(shard, full);
      comm.reduce_scatter<float>(full, shard);
      comm.broadcast(Span<float>(a), 0);
    });
    counts[on] = comm_stats().of("counted");
  }
  for (CommOp op :
       {CommOp::all_reduce, CommOp::all_gather, CommOp::reduce_scatter, CommOp::broadcast}) {
    CHECK(counts[1][op].calls == counts[0][op].calls);
    CHECK(counts[1][op].bytes == counts[0][op].bytes);
  }
  CHECK(counts[1][CommOp::all_reduce].bytes == 1000 * sizeof(float));

  // at the default threshold: a large message goes through the segment, rounds and all
  const std::size_t big = 3 * shared_segment(comm.get())->chunk_bytes() / sizeof(double) + 7;
  std::vector<double> x(big), y(big);
  for (std::size_t i = 0; i < big; ++i)
    x[i] = y[i] = static_cast<double>((i % 11) * (comm.rank() + 1));
  comm.all_reduce(Span<double>(x));
  with_shm(false, [&] { comm.all_reduce(Span<double>(y)); });
  CHECK(x == y);
}

namespace {

// One all-to-all of the test pattern (all_to_all_testing.hpp) on `comm`: blocking or not, by
// the shared-memory path (shm) or MPI's; the receive buffer, slack included.
template <class T>
std::vector<T> a2a_run(const Comm& comm, std::int64_t scale, bool shm, bool blocking) {
  const int p = comm.size(), r = comm.rank();
  const test::a2a::Pattern q = test::a2a::pattern(p, r, scale);
  const std::vector<T> send = test::a2a::send_buffer<T>(p, r, scale);
  std::vector<T> recv(test::a2a::total(q.recv_counts) + 2, static_cast<T>(-7));
  with_shm(shm, [&] {
    if (blocking)
      comm.all_to_all_v<T>(send, q.send_counts, recv, q.recv_counts);
    else
      comm.i_all_to_all_v<T>(send, q.send_counts, recv, q.recv_counts).wait();
  });
  return recv;
}

// Every path equals the pattern bit for bit (so the shared-memory path equals MPI_Alltoallv's).
template <class T>
void a2a_check_paths(const Comm& comm, std::size_t chunk) {
  const int p = comm.size(), r = comm.rank();
  for (std::int64_t scale : {1, 37, 700}) {
    const std::vector<T> want = test::a2a::expected<T>(p, r, scale);
    for (bool shm : {true, false}) {
      std::vector<T> blocking, posted;
      with_shm(
          shm, [&] { blocking = a2a_run<T>(comm, scale, shm, true); }, chunk);
      posted = a2a_run<T>(comm, scale, shm, false);
      CHECK_MESSAGE(std::memcmp(blocking.data(), want.data(), want.size() * sizeof(T)) == 0,
                    "scale " << scale << ", shm " << shm << ", chunk " << chunk);
      CHECK(std::memcmp(posted.data(), want.data(), want.size() * sizeof(T)) == 0);
    }
  }
}

// The pattern through DeviceComm<Emulated> along `path`: device buffers in, device buffers out.
template <class T>
std::vector<T> a2a_on_device(const Comm& comm, backend::CollectivePath path, std::int64_t scale) {
  using backend::Emulated;
  const backend::DeviceComm<Emulated> group(comm, path);
  const int p = comm.size(), r = comm.rank();
  const test::a2a::Pattern q = test::a2a::pattern(p, r, scale);
  const std::vector<T> send = test::a2a::send_buffer<T>(p, r, scale, 0);
  const std::size_t n_out = test::a2a::total(q.recv_counts);
  backend::DeviceBuffer<T, Emulated> in(MemoryKind::buffers, send.size() + 1, Fill::zero),
      out(MemoryKind::buffers, n_out + 1, Fill::zero);
  backend::copy_from_host<Emulated>(in.data(), send.data(), send.size());
  group.all_to_all_v(in.data(), q.send_counts, out.data(), q.recv_counts);
  return backend::host_copy<Emulated>(out.data(), n_out);
}

}  // namespace

TEST_CASE("all_to_all_v: uneven blocks, zeros, a rank that sends nothing; every path bitwise") {
  const int p = test::world().size();
  for (std::size_t chunk : {std::size_t(1) << 18, std::size_t(64) * p}) {  // 1 round, many
    const Comm comm = test::world().dup("a2a");  // its segment is made with this chunk
    a2a_check_paths<double>(comm, chunk);
    a2a_check_paths<std::int32_t>(comm, chunk);
  }
  const Comm comm = test::world().dup("a2a");
  const test::a2a::Pattern q = test::a2a::pattern(p, comm.rank(), 5);
  CHECK(comm.exchange_counts(q.send_counts) == q.recv_counts);  // what each rank will send me
}

TEST_CASE("all_to_all_v counts what leaves the rank, its own block as kept, on both paths") {
  const Comm comm = test::world().dup("a2a-counted");
  const int p = comm.size(), r = comm.rank();
  const test::a2a::Pattern q = test::a2a::pattern(p, r, 3);
  const std::uint64_t bytes = test::a2a::total(q.send_counts) * sizeof(double);
  const std::uint64_t own = q.send_counts[r] * sizeof(double);
  for (bool shm : {true, false}) {
    comm_stats().reset();
    static_cast<void>(a2a_run<double>(comm, 3, shm, true));
    const CommCounts c = comm_stats().of("a2a-counted");
    CHECK(c[CommOp::all_to_all].calls == (p > 1 ? 1u : 0u));
    CHECK(c[CommOp::all_to_all].bytes == (p > 1 ? bytes : 0u));
    CHECK(c[CommOp::all_to_all].kept == (p > 1 ? own : 0u));
    CHECK(wire_bytes(c) == (p > 1 ? double(bytes - own) : 0.0));
  }
  comm_stats().reset();
  static_cast<void>(comm.exchange_counts(q.send_counts));
  const OpCount counts = comm_stats().of("a2a-counted")[CommOp::all_to_all];
  CHECK(counts.bytes == (p > 1 ? p * sizeof(std::int64_t) : 0u));
  CHECK(counts.kept == (p > 1 ? sizeof(std::int64_t) : 0u));
  CHECK(std::string(to_string(CommOp::all_to_all)) == "all_to_all");
}

TEST_CASE("DeviceComm::all_to_all_v on the emulated device: host staging and NCCL's semantics") {
  const Comm comm = test::world().dup("a2a-device");
  const int p = comm.size(), r = comm.rank();
  for (auto path : {backend::CollectivePath::host_staging, backend::CollectivePath::nccl}) {
    for (std::int64_t scale : {1, 300}) {
      comm_stats().reset();
      const std::vector<double> got = a2a_on_device<double>(comm, path, scale);
      std::vector<double> want = test::a2a::expected<double>(p, r, scale, 0);
      CHECK_MESSAGE(got == want, backend::to_string(path) << ", scale " << scale);
      const test::a2a::Pattern q = test::a2a::pattern(p, r, scale);
      const OpCount c = comm_stats().of("a2a-device")[CommOp::all_to_all];
      CHECK(c.bytes == (p > 1 ? test::a2a::total(q.send_counts) * sizeof(double) : 0u));
      CHECK(c.kept == (p > 1 ? q.send_counts[r] * sizeof(double) : 0u));
    }
  }
}

TEST_CASE("all_to_all_v refuses bad counts with an Error on every rank, never a hang") {
  const Comm comm = test::world().dup("a2a-bad");
  const int p = comm.size(), r = comm.rank();
  std::vector<double> send(64, 1.0), recv(64);
  const AllToAllCounts ones(std::size_t(p), 1), short_counts(std::size_t(p) + 1, 1);
  CHECK_THROWS_WITH_AS(comm.all_to_all_v<double>(send, short_counts, recv, ones),
                       doctest::Contains("send_counts has"), Error);
  CHECK_THROWS_WITH_AS(static_cast<void>(comm.exchange_counts(short_counts)),
                       doctest::Contains("entries"), Error);
  AllToAllCounts negative = ones, too_many = ones;
  negative[0] = -1;
  too_many[0] = 100;  // past the 64 elements of recv
  CHECK_THROWS_WITH_AS(comm.all_to_all_v<double>(send, ones, recv, negative),
                       doctest::Contains("recv_counts[0] = -1 is negative"), Error);
  CHECK_THROWS_WITH_AS(comm.i_all_to_all_v<double>(send, ones, recv, too_many).wait(),
                       doctest::Contains("elements; the buffer holds 64"), Error);
  const backend::DeviceComm<backend::Emulated> device(comm, backend::CollectivePath::nccl);
  CHECK_THROWS_AS(device.all_to_all_v<double>(nullptr, short_counts, nullptr, ones), Error);
  // a count MPI_Alltoallv cannot take before MPI 4 (MPI_Alltoallv_c), named
  CHECK_THROWS_WITH_AS(a2a::int_counts({1, (std::size_t(1) << 31) + 3}, "send_counts"),
                       doctest::Contains("send_counts[1] = 2147483651 elements: past INT_MAX"),
                       Error);
  if (p < 2) return;
  // rank 0 expects one element more from rank p-1 than rank p-1 sends: found on every rank
  AllToAllCounts expects = ones;
  if (r == 0) expects[p - 1] = 2;
  const std::string wrong =
      "rank " + std::to_string(p - 1) + " sends 1 elements to rank 0, which expects 2";
  with_shm(true, [&] {
    CHECK_THROWS_WITH_AS(comm.all_to_all_v<double>(send, ones, recv, expects),
                         doctest::Contains(wrong.c_str()), Error);
    comm.all_to_all_v<double>(send, ones, recv, ones);  // and the segment still works
  });
  CHECK(recv[0] == 1.0);
}

TEST_CASE("all_to_all_v past 2^31 elements in one block, through shared memory") {
  // 2 x 2 GiB of copies: ~5 s at 2 ranks on 2 cores, ~20 s at 8, where the idle ranks take
  // turns on the cores: only in the 2-rank run
  if (test::world().size() != 2) return;
  TRIDENT_RANKS(2, comm);
  if (!shared_segment(comm.get())) return;  // on two nodes (TRIDENT_SHM_NODE_RANKS=1)
  // rank 0 sends rank 1 2^31 + 3 bytes: byte x is pattern(x mod kSent); rank 1's buffer repeats
  // every kGot bytes, so its byte o holds the last x = o + k kGot sent there
  constexpr std::size_t kBig = (std::size_t(1) << 31) + 3, kSent = 2 << 20, kGot = kSent + 4096;
  auto pattern = [](std::size_t x) { return static_cast<char>((x * 131 + 7) % 251); };
  const bool sends = comm.rank() == 0;
  const test::a2a::Repeating buffer(kBig, sends ? kSent : kGot);
  if (sends)
    for (std::size_t x = 0; x < kSent; ++x) buffer.data()[x] = pattern(x);
  const AllToAllCounts from_0{0, std::int64_t(kBig)}, none{0, 0};
  std::vector<char> nothing(1);
  const Span<const char> send = sends ? Span<const char>(buffer.data(), kBig) : nothing;
  const Span<char> recv = sends ? Span<char>(nothing) : Span<char>(buffer.data(), kBig);
  with_shm(true, [&] {
    comm.all_to_all_v(send, sends ? from_0 : none, recv,
                      sends ? none : AllToAllCounts{from_0[1], 0});
  });
  if (sends) return;
  std::size_t wrong = 0;
  for (std::size_t o = 0; o < kGot; ++o) {
    const std::size_t last = o + (kBig - 1 - o) / kGot * kGot;
    wrong += buffer.data()[o] != pattern(last % kSent);
  }
  CHECK(wrong == 0);
}
