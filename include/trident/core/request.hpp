// trident/core/request.hpp: a pending nonblocking operation and the policy that completes it.
//
// Waiting policy. A rank that blocks inside MPI spins on the CPU; when ranks outnumber cores
// (8 ranks on 2 cores) the spinning ranks steal the core from the rank they wait for. Measured
// on these machines: a 64 KiB all-reduce over 8 ranks takes ~90 ms with blocking MPI and ~7 ms
// when completed by MPI_Test + sched_yield(); with 2 ranks on 2 cores the loop costs nothing.
// So every operation in trident is started nonblocking and completed by `wait()` below.
// A point-to-point wait longer than a millisecond (a pipeline stage waiting for its neighbour's
// microbatch) then naps: a yielding rank stays runnable and the scheduler keeps giving it
// turns, while a sleeping one leaves its core to the ranks that compute. Measured (bench/pp,
// 4 stages on 2 cores, m = 8): PP=4 training 1.03x the single process with yield alone,
// 1.37-1.42x with naps after 0.3-3 ms of yielding. Collectives never nap: MPICH advances a
// nonblocking collective only inside the calls of its ranks, so a napping rank stalls all of
// them (bench/comm, 8 ranks: a 4 KiB all-reduce 0.12 ms yielding, 2.4 ms with naps).
#pragma once

#include <mpi.h>
#include <sched.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <utility>

#include "error.hpp"
#include "stats.hpp"

namespace trident {

enum class WaitPolicy {
  test_yield,  // MPI_Test, then sched_yield() while incomplete, naps after yield_seconds
  block        // MPI_Wait
};

inline WaitPolicy& wait_policy() {
  static WaitPolicy policy = WaitPolicy::test_yield;
  return policy;
}

// test_yield's tuning: yield for `yield_seconds` of a point-to-point wait, then nap `nap_seconds`
// between tests (the kernel adds its timer slack, ~50 us). The environment variable
// TRIDENT_YIELD_US overrides yield_seconds (in microseconds) when the process starts.
struct WaitTuning {
  double yield_seconds = 1e-3;
  double nap_seconds = 20e-6;
};

inline WaitTuning& wait_tuning() {
  static WaitTuning tuning = [] {
    WaitTuning t;
    if (const char* us = std::getenv("TRIDENT_YIELD_US")) t.yield_seconds = std::atof(us) * 1e-6;
    return t;
  }();
  return tuning;
}

namespace detail {
inline double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

// Completes `request` under the current policy; `may_nap`: a point-to-point operation.
inline void complete(MPI_Request& request, MPI_Status* status, bool may_nap) {
  if (request == MPI_REQUEST_NULL) return;
  if (wait_policy() == WaitPolicy::block) {
    check_mpi(MPI_Wait(&request, status ? status : MPI_STATUS_IGNORE), "MPI_Wait");
    return;
  }
  const WaitTuning& tuning = wait_tuning();
  const timespec nap{0, static_cast<long>(tuning.nap_seconds * 1e9)};
  const double start = now_seconds();
  int done = 0;
  for (;;) {
    check_mpi(MPI_Test(&request, &done, status ? status : MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    if (!may_nap || now_seconds() - start < tuning.yield_seconds)
      sched_yield();
    else
      nanosleep(&nap, nullptr);
  }
}
}  // namespace detail

// A started operation. Move-only; the destructor waits, so buffers outlive the transfer.
// keep_alive() ties the lifetime of a buffer to the request (released after completion).
class Request {
 public:
  Request() = default;
  Request(MPI_Request request, std::string comm, CommOp op)
      : request_(request), comm_(std::move(comm)), op_(op) {}
  Request(Request&& other) noexcept { *this = std::move(other); }
  Request& operator=(Request&& other) noexcept {
    if (this != &other) {
      finish_quietly();
      request_ = std::exchange(other.request_, MPI_REQUEST_NULL);
      comm_ = std::move(other.comm_);
      op_ = other.op_;
      keep_ = std::move(other.keep_);
    }
    return *this;
  }
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request() { finish_quietly(); }

  bool active() const { return request_ != MPI_REQUEST_NULL; }

  // Blocks (under the wait policy) until the operation completes; records the seconds waited.
  void wait(MPI_Status* status = nullptr) {
    if (!active()) return;
    const double t0 = detail::now_seconds();
    detail::complete(request_, status, op_ == CommOp::send || op_ == CommOp::recv);
    comm_stats().add_seconds(comm_, op_, detail::now_seconds() - t0);
    keep_.reset();
  }

  // Non-blocking check; true when complete (and then the request is released).
  bool test() {
    if (!active()) return true;
    int done = 0;
    check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) keep_.reset();
    return done != 0;
  }

  void keep_alive(std::shared_ptr<void> buffer) { keep_ = std::move(buffer); }

 private:
  void finish_quietly() noexcept {
    try {
      wait();
    } catch (...) {
    }
  }

  MPI_Request request_ = MPI_REQUEST_NULL;
  std::string comm_;
  CommOp op_ = CommOp::barrier;
  std::shared_ptr<void> keep_;
};

}  // namespace trident
