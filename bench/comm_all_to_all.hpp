// bench/comm_all_to_all.hpp: bench_comm's all-to-all table (--ops all_to_all): trident's
// all_to_all_v (Comm, core/all_to_all.hpp; its shared-memory path, core/shm_all_to_all.hpp,
// when the world shares a node) next to the blocking MPI_Alltoallv, on the same buffers and
// counts, interleaved call by call (the order alternating each repetition).
//
// Counts as a mixture-of-experts router's skew: rank r sends rank d a share of its total
// proportional to 1 + (r + d) mod p (its own block included), float32, 1, 4 and 16 MiB sent per
// rank. A repetition is a barrier and one call; its time is the slowest rank's. Reported: the
// medians, the bytes that leave a rank per second (its send counts but its own block), and
// mpi/ours, the median of the per-repetition ratios (> 1: ours is faster).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <trident/core/comm.hpp>
#include <trident/core/median.hpp>

namespace bench::all_to_all {

using namespace trident;

// What rank r sends each rank when it sends `elements` in all.
inline AllToAllCounts sends(int p, int r, std::size_t elements) {
  std::vector<std::size_t> weight(static_cast<std::size_t>(p));
  std::size_t sum = 0;
  for (int d = 0; d < p; ++d) {
    weight[d] = 1 + std::size_t((r + d) % p);
    sum += weight[d];
  }
  AllToAllCounts c(static_cast<std::size_t>(p));
  std::size_t given = 0;
  for (int d = 0; d < p; ++d) {
    c[d] = std::int64_t(d + 1 < p ? elements * weight[d] / sum : elements - given);
    given += std::size_t(c[d]);
  }
  return c;
}

struct Case {
  AllToAllCounts send_counts, recv_counts;
  std::vector<int> mpi_send_counts, mpi_send_starts, mpi_recv_counts, mpi_recv_starts;
  std::vector<float> in, out;
};

inline Case make_case(const Comm& world, std::size_t elements) {
  const int p = world.size(), r = world.rank();
  Case c;
  c.send_counts = sends(p, r, elements);
  for (int s = 0; s < p; ++s) c.recv_counts.push_back(sends(p, s, elements)[r]);
  int at = 0;
  for (int j = 0; j < p; ++j) {
    c.mpi_send_counts.push_back(int(c.send_counts[j]));
    c.mpi_send_starts.push_back(at);
    at += int(c.send_counts[j]);
  }
  at = 0;
  for (int j = 0; j < p; ++j) {
    c.mpi_recv_counts.push_back(int(c.recv_counts[j]));
    c.mpi_recv_starts.push_back(at);
    at += int(c.recv_counts[j]);
  }
  c.in.resize(elements);
  for (std::size_t i = 0; i < elements; ++i) c.in[i] = float(r) * 1e6f + float(i % 999983);
  c.out.assign(std::size_t(at), -1.0f);
  return c;
}

// One call: ours (Comm::all_to_all_v) or MPI_Alltoallv.
inline void call(bool ours, Case& c, const Comm& world) {
  if (ours) return world.all_to_all_v<float>(c.in, c.send_counts, c.out, c.recv_counts);
  check_mpi(MPI_Alltoallv(c.in.data(), c.mpi_send_counts.data(), c.mpi_send_starts.data(),
                          MPI_FLOAT, c.out.data(), c.mpi_recv_counts.data(),
                          c.mpi_recv_starts.data(), MPI_FLOAT, world.get()),
            "MPI_Alltoallv");
}

// Both give the same bits; an Error on every rank if not.
inline void check(Case& c, const Comm& world) {
  call(false, c, world);
  const std::vector<float> mpi = c.out;
  std::fill(c.out.begin(), c.out.end(), -1.0f);
  call(true, c, world);
  const int wrong = c.out == mpi ? 0 : 1;
  if (world.all_reduce_value(wrong) != 0) fail("all_to_all_v differs from MPI_Alltoallv");
}

struct Row {
  int reps = 0;
  double mpi = 0, ours = 0, ratio = 0;  // medians: seconds, seconds, mpi/ours
};

inline Row measure(Case& c, const Comm& world, double seconds) {
  std::vector<double> times[2];
  auto repetition = [&](int i) {
    for (int k = 0; k < 2; ++k) {
      const bool ours = (i + k) % 2 == 1;  // alternate which goes first
      world.barrier();
      const double t0 = MPI_Wtime();
      call(ours, c, world);
      times[ours].push_back(MPI_Wtime() - t0);
    }
  };
  const double t0 = MPI_Wtime();
  repetition(0);  // warm-up
  const double per_rep = world.all_reduce_value(MPI_Wtime() - t0, ReduceOp::max);
  Row row;
  row.reps = std::clamp(int(seconds / per_rep), 5, 1000);
  times[0].clear();
  times[1].clear();
  for (int i = 0; i < row.reps; ++i) repetition(i);
  std::vector<double> ratios;
  for (std::vector<double>& t : times)
    MPI_Allreduce(MPI_IN_PLACE, t.data(), row.reps, MPI_DOUBLE, MPI_MAX, world.get());
  for (int i = 0; i < row.reps; ++i) ratios.push_back(times[0][i] / times[1][i]);
  row.mpi = median(times[0]);
  row.ours = median(times[1]);
  row.ratio = median(ratios);
  return row;
}

// The table: 1, 4 and 16 MiB sent per rank.
inline void table(const Comm& world, double seconds, bool one_node) {
  const int p = world.size(), r = world.rank();
  if (r == 0)
    std::printf(
        "\n# all_to_all_v, %d ranks: ours = Comm::all_to_all_v (%s) vs MPI_Alltoallv; "
        "counts skewed (share 1 + (r + d) mod p); float32; time = median of the slowest "
        "rank; GB/s = bytes leaving a rank per second; mpi/ours = median of ratios\n"
        "%-8s %5s %10s %8s %10s %8s %8s\n",
        p, one_node ? "shared memory" : "MPI_Ialltoallv: ranks span nodes", "MiB/rank", "reps",
        "mpi_us", "GB/s", "ours_us", "GB/s", "mpi/ours");
  for (std::size_t mib : {1, 4, 16}) {
    Case c = make_case(world, (mib << 20) / sizeof(float));
    check(c, world);
    const Row row = measure(c, world, seconds);
    const double leaving = double(c.in.size() - std::size_t(c.send_counts[r])) * sizeof(float);
    const double most = world.all_reduce_value(leaving, ReduceOp::max);
    if (r == 0)
      std::printf("%-8zu %5d %10.1f %8.3f %10.1f %8.3f %8.2f\n", mib, row.reps, row.mpi * 1e6,
                  most / row.mpi / 1e9, row.ours * 1e6, most / row.ours / 1e9, row.ratio);
    std::fflush(stdout);
  }
}

}  // namespace bench::all_to_all
