// trident/core/request.hpp: a pending nonblocking operation and the policy that completes it.
//
// Waiting policy. A rank that blocks inside MPI spins on the CPU; when ranks outnumber cores
// (8 ranks on 2 cores) the spinning ranks steal the core from the rank they wait for. Measured
// on these machines: a 64 KiB all-reduce over 8 ranks takes ~90 ms with blocking MPI and ~7 ms
// when completed by MPI_Test + sched_yield(); with 2 ranks on 2 cores the loop costs nothing.
// So every operation in trident is started nonblocking and completed by `wait()` below.
#pragma once

#include <mpi.h>
#include <sched.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "error.hpp"
#include "stats.hpp"

namespace trident {

enum class WaitPolicy {
  test_yield,  // MPI_Test, then sched_yield() while incomplete (the default)
  block        // MPI_Wait
};

inline WaitPolicy& wait_policy() {
  static WaitPolicy policy = WaitPolicy::test_yield;
  return policy;
}

namespace detail {
inline double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

// Completes `request` under the current policy.
inline void complete(MPI_Request& request, MPI_Status* status) {
  if (request == MPI_REQUEST_NULL) return;
  if (wait_policy() == WaitPolicy::block) {
    check_mpi(MPI_Wait(&request, status ? status : MPI_STATUS_IGNORE), "MPI_Wait");
    return;
  }
  int done = 0;
  for (;;) {
    check_mpi(MPI_Test(&request, &done, status ? status : MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    sched_yield();
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
    detail::complete(request_, status);
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
