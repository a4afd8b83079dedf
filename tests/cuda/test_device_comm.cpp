// tests/cuda/test_device_comm.cpp: the choice of collective path (mpi, nccl, host staging) and
// DeviceComm's host staging, on the CPU: backend::Cpu's memory stands in for device memory
// (its copies are memcpy), so the staged collectives (device -> host -> MPI -> host -> device)
// are checked against the direct ones: the same results and the same bytes in CommStats.
#include <trident/backend/cpu/cpu.hpp>
#include <trident/backend/device_comm.hpp>
#include <trident/backend/kernels/cross_entropy.hpp>
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
// Runs every collective of DeviceComm<Cpu> along `path` on the same inputs; returns the
// results, one after the other, and the bytes CommStats counted for them.
std::vector<double> run_collectives(const Comm& comm, CollectivePath path, std::uint64_t& bytes) {
  const DeviceComm<Cpu> dc(comm, path);
  const int p = comm.size(), r = comm.rank();
  const std::size_t n = 6;
  std::vector<double> sum(n * p), shard(n), gathered(n * p), bcast(n), result;
  for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = r * 100.0 + i * 0.5;
  for (std::size_t i = 0; i < n; ++i) bcast[i] = r == p - 1 ? 7.0 + i : -1.0;
  const std::uint64_t before = comm_stats().of(comm.name()).total().bytes;
  dc.reduce_scatter(sum.data(), shard.data(), n);
  dc.all_reduce(sum.data(), sum.size());
  dc.all_gather(shard.data(), gathered.data(), n);
  dc.broadcast(bcast.data(), n, p - 1);
  std::vector<double> ring(n, r + 0.25);  // send to the next rank, receive from the previous
  if (p > 1) {
    if (r % 2 == 0) {
      dc.send(ring.data(), n, (r + 1) % p, 5);
      dc.recv(ring.data(), n, (r + p - 1) % p, 5);
    } else {
      std::vector<double> got(n);
      dc.recv(got.data(), n, (r + p - 1) % p, 5);
      dc.send(ring.data(), n, (r + 1) % p, 5);
      ring = got;
    }
  }
  bytes = comm_stats().of(comm.name()).total().bytes - before;
  for (const auto* v : {&sum, &shard, &gathered, &bcast, &ring})
    result.insert(result.end(), v->begin(), v->end());
  return result;
}
}  // namespace

TEST_CASE("host staging: the same results and the same counted bytes as direct collectives") {
  const Comm& world = test::world();
  std::uint64_t direct_bytes = 0, staged_bytes = 0;
  const auto direct = run_collectives(world, CollectivePath::mpi, direct_bytes);
  const auto staged = run_collectives(world, CollectivePath::host_staging, staged_bytes);
  CHECK(staged == direct);
  CHECK(staged_bytes == direct_bytes);
  if (world.size() > 1) CHECK(direct_bytes > 0);
  // The staged all-reduce really reduced: element 0 is the sum of r * 100 over the ranks.
  const int p = world.size();
  CHECK(direct[0] == doctest::Approx(100.0 * p * (p - 1) / 2));
}

TEST_CASE("device comm: NCCL is refused with a clear Error until it exists") {
  CHECK_THROWS_WITH_AS(DeviceComm<Cpu>(test::world(), CollectivePath::nccl),
                       doctest::Contains("the NCCL path is not implemented yet"), Error);
}

// Megatron's vocab-parallel cross-entropy (Shoeybi et al. 2019): each rank holds a slice of the
// (padded) vocabulary; the kernels' reduce hooks are DeviceComm all-reduces through host
// staging. Every rank's losses and probability slice equal the unsplit nn/ layer's in double.
TEST_CASE("vocab-parallel cross-entropy kernels, hooks staged through the host, against nn/") {
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

  std::vector<double> mine(N * V_local), my_losses(N), my_probs(N * V_local);
  for (int i = 0; i < N; ++i)
    std::copy_n(logits.begin() + i * V_padded + begin, V_local, mine.begin() + i * V_local);
  const DeviceComm<Cpu> dc(world, CollectivePath::host_staging);
  backend::kernels::cross_entropy_forward<Cpu>(
      my_losses.data(), my_probs.data(), mine.data(), targets.data(), N, V_local, begin, vocab,
      [&](double* buf, int n) { dc.all_reduce(buf, std::size_t(n), ReduceOp::max); },
      [&](double* buf, int n) { dc.all_reduce(buf, std::size_t(n), ReduceOp::sum); });
  for (int i = 0; i < N; ++i) {
    CHECK(std::abs(my_losses[i] - losses[i]) <= 1e-12 * std::abs(losses[i]));
    for (int v = 0; v < V_local; ++v)
      CHECK(std::abs(my_probs[i * V_local + v] - probs[i * V_padded + begin + v]) <= 1e-12);
  }
}
