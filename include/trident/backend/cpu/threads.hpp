// trident/backend/cpu/threads.hpp: how many OpenMP threads (and Eigen and BLAS GEMM threads) each
// rank uses.
//
// Default: the cores of the node divided by the ranks on the node, at least 1, so that
// `mpiexec -n 2` on 2 cores runs one thread per rank. OMP_NUM_THREADS overrides the default;
// an explicit request (a --threads flag) overrides both. A Trainer calls it with the default
// when the program has not (threads_configured()), so that a host app never runs every rank
// with all the node's cores; more threads x ranks than cores prints a warning.
#pragma once

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
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

namespace detail {
inline bool& threads_chosen() {
  static bool chosen = false;
  return chosen;
}
}  // namespace detail
// Whether configure_threads has run in this process.
inline bool threads_configured() {
  return detail::threads_chosen();
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
  detail::threads_chosen() = true;
  const int cores = cores_available();
  if (threads > 1 && threads * node.size() > cores && node.rank() == 0)
    std::fprintf(stderr,
                 "trident: warning: %d ranks x %d threads on this node exceed its %d cores "
                 "(threads per rank: OMP_NUM_THREADS or configure_threads)\n",
                 node.size(), threads, cores);
  return threads;
}

}  // namespace trident
