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
// Every wait has a deadline, wait_tuning().timeout_seconds: past it the watchdog reports the
// hang on every rank and ends the job (watchdog.hpp). A collective's wait reads the clock every
// 16th test only: measured here, a clock read costs ~0.13 us next to ~1.2 us for MPI_Test +
// sched_yield. WaitPolicy::block (MPI_Wait, for comparisons only) has no deadline.
#pragma once

#include <mpi.h>
#include <sched.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <utility>

#include "error.hpp"
#include "flight_recorder.hpp"
#include "stats.hpp"
#include "watchdog.hpp"

namespace trident {

enum class WaitPolicy {
  test_yield,  // MPI_Test, then sched_yield() while incomplete, naps after yield_seconds
  block        // MPI_Wait
};

inline WaitPolicy& wait_policy() {
  static WaitPolicy policy = WaitPolicy::test_yield;
  return policy;
}

// For measurements only (bench_zero's overlap table): false completes every nonblocking
// collective inside the call that starts it, so no collective overlaps computation and the time
// inside calls and waits (CommStats seconds) is all of its time. (Point-to-point stays as it is:
// a send waited for at once could wait for a receive its peer has not posted yet.)
inline bool& overlap_communication() {
  static bool on = true;
  return on;
}

namespace detail {
// MPI requests of this process started and not yet completed. MPICH advances a nonblocking
// operation only inside MPI calls of its ranks, so a rank that waits outside MPI (a barrier of
// the shared-memory collectives) while some are pending calls progress() now and then: the
// pending ones advance, and a peer waiting on one of them cannot wait for this rank forever.
inline int& pending_requests() {
  static int n = 0;
  return n;
}
inline void progress() {
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}
}  // namespace detail

// test_yield's tuning: yield for `yield_seconds` of a point-to-point wait, then nap `nap_seconds`
// between tests (the kernel adds its timer slack, ~50 us); give up after `timeout_seconds`.
// Read from the environment when the process starts: TRIDENT_YIELD_US (yield_seconds, in
// microseconds) and TRIDENT_TIMEOUT (timeout_seconds, default 600).
struct WaitTuning {
  double yield_seconds = 1e-3;
  double nap_seconds = 20e-6;
  double timeout_seconds = 600;
};

// A timeout is a number of seconds > 0 (not NaN or infinite); `what` names its source.
inline double checked_timeout(double seconds, const std::string& what) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  require(std::isfinite(seconds) && seconds > 0,
          what + " must be a number of seconds > 0, got " + text);
  return seconds;
}

inline WaitTuning& wait_tuning() {
  static WaitTuning tuning = [] {
    WaitTuning t;
    if (const char* us = std::getenv("TRIDENT_YIELD_US")) t.yield_seconds = std::atof(us) * 1e-6;
    if (const char* s = std::getenv("TRIDENT_TIMEOUT"); s && *s) {
      char* end = nullptr;
      const double seconds = std::strtod(s, &end);
      t.timeout_seconds = checked_timeout(*end ? std::nan("") : seconds, "TRIDENT_TIMEOUT");
    }
    return t;
  }();
  return tuning;
}

namespace detail {
// Calls `done()` until it returns true, and `idle(seconds waited)` in between. Past the
// deadline, or when another rank's watchdog has fired, the watchdog fires here. The clock is
// read before each idle() when `clock_each_time`, else every 16th time. Shared by MPI requests
// (complete(), below) and the barriers of the shared-memory collectives (shared_memory.hpp).
template <class Done, class Idle>
void wait_until(Done&& done, bool clock_each_time, const Waiting& what, Idle&& idle) {
  const double start = now_seconds();
  double now = start, next_probe = start + watchdog::kPollAfter;
  for (unsigned spins = 1;; ++spins) {
    if (done()) return;
    if (clock_each_time || spins % 16 == 0) now = now_seconds();
    if (now >= next_probe) {  // a long wait: has the deadline passed, or a watchdog fired?
      if (now - start > wait_tuning().timeout_seconds) watchdog::fire(what, now - start, true);
      if (watchdog::alarm_heard()) watchdog::fire(what, now - start, false);
      next_probe = now + watchdog::kPollEvery;
    }
    idle(now - start);
  }
}

// Completes `request` under the current policy; a point-to-point operation (send/recv) may nap.
inline void complete(MPI_Request& request, MPI_Status* status, const Waiting& what) {
  if (request == MPI_REQUEST_NULL) return;
  if (wait_policy() == WaitPolicy::block) {
    check_mpi(MPI_Wait(&request, status ? status : MPI_STATUS_IGNORE), "MPI_Wait");
    return;
  }
  const bool may_nap = what.op == CommOp::send || what.op == CommOp::recv;
  const WaitTuning& tuning = wait_tuning();
  const timespec nap{0, static_cast<long>(tuning.nap_seconds * 1e9)};
  // point-to-point reads the clock each time (when to nap); a collective every 16th time
  wait_until(
      [&] {
        int done = 0;
        check_mpi(MPI_Test(&request, &done, status ? status : MPI_STATUS_IGNORE), "MPI_Test");
        return done != 0;
      },
      may_nap, what,
      [&](double waited) {
        if (!may_nap || waited < tuning.yield_seconds)
          sched_yield();
        else
          nanosleep(&nap, nullptr);
      });
}
}  // namespace detail

// A started operation. Move-only; the destructor waits, so buffers outlive the transfer.
// keep_alive() ties the lifetime of a buffer to the request (released after completion).
// [[nodiscard]]: a request dropped where it is returned is waited for at once, which silently
// turns a nonblocking call (Comm::iall_reduce, isend, ...) into a blocking one.
class [[nodiscard]] Request {
 public:
  Request() = default;
  Request(MPI_Request request, std::string comm, CommOp op, Waiting what = {})
      : request_(request), comm_(std::move(comm)), op_(op), what_(what) {
    if (active()) detail::pending_requests() += 1;
  }
  // the cast: nvcc takes the class's [[nodiscard]] to cover the returned reference
  Request(Request&& other) noexcept { static_cast<void>(*this = std::move(other)); }
  Request& operator=(Request&& other) noexcept {
    if (this != &other) {
      finish_quietly();
      request_ = std::exchange(other.request_, MPI_REQUEST_NULL);
      comm_ = std::move(other.comm_);
      op_ = other.op_;
      what_ = other.what_;
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
    flight_recorder().waiting(what_.record, t0);
    detail::complete(request_, status, what_);
    detail::pending_requests() -= 1;
    const double t1 = detail::now_seconds();
    comm_stats().add_seconds(comm_, op_, t1 - t0);
    flight_recorder().end(what_.record, t1);
    keep_.reset();
  }

  // Non-blocking check; true when complete (and then the request is released).
  [[nodiscard]] bool test() {
    if (!active()) return true;
    int done = 0;
    check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) {
      detail::pending_requests() -= 1;
      flight_recorder().end(what_.record, detail::now_seconds());
      keep_.reset();
    }
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
  Waiting what_;
  std::shared_ptr<void> keep_;
};

}  // namespace trident
