// trident/backend/cpu/threads.hpp: how many OpenMP threads (and Eigen and BLAS GEMM threads) each
// rank uses.
//
// Default: the cores of the node divided by the ranks on the node, at least 1, so that
// `mpiexec -n 2` on 2 cores runs one thread per rank. OMP_NUM_THREADS overrides the default;
// an explicit request (a --threads flag) overrides both.
#pragma once

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#ifdef _OPENMP
#include <omp.h>
#endif
#include "../../core/comm.hpp"
#include "../../detail/eigen.hpp"
#include "blas.hpp"

namespace trident {

inline int cores_available() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// Sets the threads of this rank (OpenMP, Eigen and the linked BLAS) and returns the number chosen.
// Collective over `world`. requested <= 0 means "choose".
inline int configure_threads(const Comm& world, int requested = 0) {
  const Comm node = node_comm(world);
  int threads = requested;
  if (threads <= 0) {
    const char* env = std::getenv("OMP_NUM_THREADS");
    threads = env ? std::atoi(env) : 0;
  }
  if (threads <= 0) threads = std::max(1, cores_available() / node.size());
#ifdef _OPENMP
  omp_set_num_threads(threads);
#endif
  Eigen::setNbThreads(threads);
  backend::blas::set_threads(threads);
  return threads;
}

}  // namespace trident
