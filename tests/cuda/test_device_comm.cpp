// tests/cuda/test_device_comm.cpp: the choice of collective path (mpi, nccl, host staging) and
// DeviceComm's host staging on the emulated device (backend::Emulated: guarded memory that host
// code cannot touch, so every byte must go through the backend's copies): every collective,
// blocking and nonblocking, and the point-to-point exchanges, staged, against the same calls
// direct on the CPU's memory — the same results and the same bytes in CommStats.
#include <trident/backend/cpu/cpu.hpp>
#include <trident/backend/device_comm.hpp>
#include <trident/backend/emulated/emulated.hpp>
#include <trident/nn/cross_entropy.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../mpi_test.hpp"

using namespace trident;
using namespace trident::backend;

TEST_CASE("collective path: host memory is MPI; a shared GPU forces host staging") {
  CHECK(choose_collective_path(true, {"a", "a"}) == CollectivePath::mpi);
  CHECK(choose_collective_path(false, {"a"}) == CollectivePath::nccl);
  CHECK(choose_collective_path(false, {"a", "b", "c"}) == CollectivePath::nccl);
  CHECK(choose_collective_path(false, {"a", "b", "a"}) == CollectivePath::host_staging);
}

TEST_CASE("collective path over the world: device ids gathered per node, one answer everywhere") {
  const Comm& world = test::world();
  const Comm node = node_comm(world);
  // Every rank on its own device, then every rank of a node on one device.
  const auto own = collective_path(world, false, "gpu-" + std::to_string(world.rank()));
  const auto shared = collective_path(world, false, "gpu-0");
  CHECK(own == CollectivePath::nccl);
  CHECK(shared == (node.size() > 1 ? CollectivePath::host_staging : CollectivePath::nccl));
  // One rank alone sharing (ranks 0 and 1 on one device) forces staging on every rank.
  const auto one_pair =
      collective_path(world, false, "gpu-" + std::to_string(world.rank() == 1 ? 0 : world.rank()));
  CHECK(one_pair == (node.size() > 1 ? CollectivePath::host_staging : CollectivePath::nccl));
  CHECK(collective_path(world, true, "ignored") == CollectivePath::mpi);
}

namespace {
template <class B>
DeviceBuffer<double, B> on(const std::vector<double>& host) {
  DeviceBuffer<double, B> d(MemoryKind::buffers, host.size(), Fill::none);
  B::to_device(d.data(), host.data(), host.size() * sizeof(double));
  return d;
}
template <class B>
std::vector<double> off(const DeviceBuffer<double, B>& d) {
  return host_copy<B>(d.data(), d.size());
}

// Runs every collective of DeviceComm<B> along `path` on the same inputs, blocking and
// nonblocking, and a ring of point-to-point exchanges; returns the results one after the other
// and the bytes CommStats counted for them.
template <class B>
std::vector<double> run_collectives(const Comm& comm, CollectivePath path, std::uint64_t& bytes) {
  const DeviceComm<B> dc(comm, path);
  const int p = comm.size(), r = comm.rank();
  const std::size_t n = 6;
  std::vector<double> sum(n * p), gathered_in_place(n * p, -1.0), bcast(n);
  for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = r * 100.0 + i * 0.5;
  for (std::size_t i = 0; i < n; ++i) gathered_in_place[r * n + i] = r + i * 0.125;
  for (std::size_t i = 0; i < n; ++i) bcast[i] = r == p - 1 ? 7.0 + i : -1.0;
  auto sum_d = on<B>(sum), shard_d = on<B>(std::vector<double>(n)),
       gathered_d = on<B>(std::vector<double>(n * p)), bcast_d = on<B>(bcast), sum2_d = on<B>(sum),
       rs_d = on<B>(sum), ag_d = on<B>(gathered_in_place),
       ag2_d = on<B>(std::vector<double>(n * p)), ring_d = on<B>(std::vector<double>(n, r + 0.25)),
       got_d = on<B>(std::vector<double>(n));
  const std::uint64_t before = comm_stats().of(comm.name()).total().bytes;
  dc.reduce_scatter(sum_d.data(), shard_d.data(), n);
  dc.all_reduce(sum_d.data(), sum_d.size());
  dc.all_gather(shard_d.data(), gathered_d.data(), n);
  dc.broadcast(bcast_d.data(), n, p - 1);
  {  // nonblocking, all in flight together
    DeviceRequest a = dc.iall_reduce(sum2_d.data(), sum2_d.size());
    DeviceRequest b = dc.ireduce_scatter_in_place(rs_d.data(), rs_d.size());
    DeviceRequest c = dc.iall_gather_in_place(ag_d.data(), ag_d.size());
    DeviceRequest d = dc.iall_gather(shard_d.data(), ag2_d.data(), n);
    a.wait();
    b.wait();
    c.wait();
    d.wait();
  }
  if (p > 1) {  // send to the next rank, receive from the previous
    DeviceRequest in = dc.irecv(got_d.data(), n, (r + p - 1) % p, 5);
    dc.isend(ring_d.data(), n, (r + 1) % p, 5).wait();
    in.wait();
    dc.exchange(got_d.data(), ring_d.data(), n, (r ^ 1) < p ? (r ^ 1) : r, 6);  // in pairs
  }
  bytes = comm_stats().of(comm.name()).total().bytes - before;
  std::vector<double> result;
  for (const auto* d : {&sum_d, &shard_d, &gathered_d, &bcast_d, &sum2_d, &ag_d, &ag2_d, &ring_d}) {
    const auto v = off<B>(*d);
    result.insert(result.end(), v.begin(), v.end());
  }
  const auto rs = off<B>(rs_d);  // the in-place reduce-scatter's shard: the first n
  result.insert(result.end(), rs.begin(), rs.begin() + n);
  return result;
}
}  // namespace

TEST_CASE("host staging on the emulated device: the results and counted bytes of direct MPI") {
  const Comm& world = test::world();
  std::uint64_t direct_bytes = 0, staged_bytes = 0;
  const auto direct = run_collectives<Cpu>(world, CollectivePath::mpi, direct_bytes);
  const auto staged = run_collectives<Emulated>(world, CollectivePath::host_staging, staged_bytes);
  CHECK(staged == direct);
  CHECK(staged_bytes == direct_bytes);
  if (world.size() > 1) CHECK(direct_bytes > 0);
  // The staged all-reduce really reduced: element 0 is the sum of r * 100 over the ranks.
  const int p = world.size();
  CHECK(direct[0] == doctest::Approx(100.0 * p * (p - 1) / 2));
}

TEST_CASE("device comm: MPI cannot read device memory; the CPU has no NCCL, the emulated one's") {
  CHECK_THROWS_WITH_AS(DeviceComm<Emulated>(test::world(), CollectivePath::mpi),
                       doctest::Contains("MPI cannot read emulated memory"), Error);
  CHECK_THROWS_WITH_AS(DeviceComm<Cpu>(test::world(), CollectivePath::nccl),
                       doctest::Contains("the nccl path needs the CUDA backend built with NCCL"),
                       Error);
  // The emulated device's NCCL is NCCL's semantics over MPI (backend/emulated/mpi_nccl.hpp).
  CHECK(DeviceComm<Emulated>(test::world(), CollectivePath::nccl).path() == CollectivePath::nccl);
  CHECK(DeviceComm<Cpu>::staged_path() == CollectivePath::mpi);
  CHECK(DeviceComm<Emulated>::staged_path() == CollectivePath::host_staging);
}

// Megatron's vocab-parallel cross-entropy (Shoeybi et al. 2019): each rank holds a slice of the
// (padded) vocabulary on the emulated device; the layer's reduce hooks are DeviceComm
// all-reduces through host staging. Every rank's losses and probability slice equal the unsplit
// layer's on the CPU in double.
TEST_CASE("vocab-parallel cross-entropy on the emulated device, hooks staged, against unsplit") {
  const Comm& world = test::world();
  const int p = world.size(), r = world.rank(), N = 5, vocab = 13;
  const int V_local = (vocab + p - 1) / p, V_padded = V_local * p, begin = r * V_local;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-4, 4);
  std::vector<double> logits(N * V_padded);
  for (double& x : logits) x = u(rng);
  std::vector<std::int32_t> targets(N);
  for (int i = 0; i < N; ++i) targets[i] = (i * 6 + 1) % vocab;
  std::vector<double> losses(N), probs(N * V_padded);
  nn::cross_entropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V_padded,
                            0, vocab);

  std::vector<double> mine(N * V_local);
  for (int i = 0; i < N; ++i)
    std::copy_n(logits.begin() + i * V_padded + begin, V_local, mine.begin() + i * V_local);
  const DeviceComm<Emulated> dc(world, CollectivePath::host_staging);
  auto mine_d = on<Emulated>(mine), losses_d = on<Emulated>(std::vector<double>(N)),
       probs_d = on<Emulated>(std::vector<double>(N * V_local));
  DeviceBuffer<std::int32_t, Emulated> targets_d(MemoryKind::buffers, N, Fill::none);
  Emulated::to_device(targets_d.data(), targets.data(), N * sizeof(std::int32_t));
  nn::cross_entropy_forward<Emulated>(
      losses_d.data(), probs_d.data(), mine_d.data(), targets_d.data(), N, V_local, begin, vocab,
      [&](double* buf, int n) { dc.all_reduce(buf, std::size_t(n), ReduceOp::max); },
      [&](double* buf, int n) { dc.all_reduce(buf, std::size_t(n), ReduceOp::sum); });
  const auto my_losses = off<Emulated>(losses_d), my_probs = off<Emulated>(probs_d);
  for (int i = 0; i < N; ++i) {
    CHECK(std::abs(my_losses[i] - losses[i]) <= 1e-12 * std::abs(losses[i]));
    for (int v = 0; v < V_local; ++v)
      CHECK(std::abs(my_probs[i * V_local + v] - probs[i * V_padded + begin + v]) <= 1e-12);
  }
}
