// trident/core/fault.hpp: fault injection for tests, compiled in and off unless TRIDENT_FAULT is
// set. The variable names one fault, the rank it hits and the step (0-based) it hits at:
//
//   TRIDENT_FAULT=skip-collective:rank=1:step=2   rank 1 skips its next collective at step 2
//   TRIDENT_FAULT=kill-mid-step:rank=1:step=2     rank 1 kills itself (SIGKILL) in step 2
//   TRIDENT_FAULT=nan-loss:rank=0:step=2          rank 0's share of the loss is NaN at step 2
//   TRIDENT_FAULT=nan-grad:rank=0:step=2          rank 0's share of the gradient norm is NaN
//   TRIDENT_FAULT=slow:rank=1:ms=20               rank 1 sleeps 20 ms before each forward pass
//                                                 of a microbatch (train/waits.hpp names it)
//
// A missing rank= or step= matches any. The code that owns a fault asks armed(kind, rank, step)
// at the point where the fault happens (a training step's through StepFaults); the variable is
// read once, so asking is cheap.
#pragma once

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "error.hpp"

namespace trident::fault {

struct Spec {
  std::string kind;
  int rank = -1;  // -1: any rank
  int step = -1;  // -1: any step
  int ms = 0;     // slow: the sleep, milliseconds
};

namespace detail {
inline int parse_number(const std::string& text, const std::string& whole) {
  std::size_t used = 0;
  int value = -1;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  require(used == text.size() && !text.empty() && value >= 0,
          "TRIDENT_FAULT='" + whole + "': '" + text + "' is not a number >= 0");
  return value;
}

// "kind:key=value:key=value" -> Spec; keys rank and step.
inline Spec parse(const std::string& text) {
  Spec spec;
  std::size_t begin = 0;
  for (int field = 0; begin <= text.size(); ++field) {
    std::size_t end = text.find(':', begin);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(begin, end - begin);
    if (field == 0) {
      spec.kind = item;
    } else {
      const std::size_t eq = item.find('=');
      const std::string key = item.substr(0, eq);
      require(eq != std::string::npos && (key == "rank" || key == "step" || key == "ms"),
              "TRIDENT_FAULT='" + text + "': expected rank=N, step=N or ms=N, got '" + item + "'");
      (key == "rank"   ? spec.rank
       : key == "step" ? spec.step
                       : spec.ms) = parse_number(item.substr(eq + 1), text);
    }
    begin = end + 1;
  }
  require(!spec.kind.empty(), "TRIDENT_FAULT='" + text + "': no fault kind");
  return spec;
}
}  // namespace detail

// TRIDENT_FAULT parsed; nullopt when unset or empty. Throws Error when malformed.
inline std::optional<Spec> from_environment() {
  const char* text = std::getenv("TRIDENT_FAULT");
  if (!text || !*text) return std::nullopt;
  return detail::parse(text);
}

// The fault TRIDENT_FAULT names when it is this kind, rank and step; else null. The variable is
// parsed again only when its text changes (a malformed one throws here), so asking on a hot
// path is cheap.
inline const Spec* armed_spec(const char* kind, int rank, int step) {
  static std::string text;
  static std::optional<Spec> spec;
  const char* now = std::getenv("TRIDENT_FAULT");
  const std::string current = now ? now : "";
  if (current != text) {
    spec = current.empty() ? std::nullopt : std::optional<Spec>(detail::parse(current));
    text = current;
  }
  const bool hit = spec && spec->kind == kind && (spec->rank < 0 || spec->rank == rank) &&
                   (spec->step < 0 || spec->step == step);
  return hit ? &*spec : nullptr;
}
inline bool armed(const char* kind, int rank, int step) {
  return armed_spec(kind, rank, step) != nullptr;
}

// The seconds the slow fault has slept in this process.
inline double& injected_seconds() {
  static double seconds = 0;
  return seconds;
}

// The faults a forward pass of a microbatch owns: kill-mid-step (SIGKILL, announced with the
// epoch time so a test can time the job's end) and slow (a sleep, counted).
inline void before_forward(int rank, int step) {
  if (armed("kill-mid-step", rank, step)) {
    const double epoch =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::fprintf(stderr,
                 "trident fault: rank %d kills itself with SIGKILL in step %d, at epoch %.3f s\n",
                 rank, step, epoch);
    std::fflush(stderr);
    std::raise(SIGKILL);
  }
  if (const Spec* slow = armed_spec("slow", rank, step)) {
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(slow->ms));
    injected_seconds() +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
}

// The faults of one rank's training step (train/trainer.hpp), asked where they happen: before
// each forward pass of a microbatch (before_forward's), and on the rank's shares of the loss
// (nan-loss) and of the gradient norm's sum of squares (nan-grad), NaN when armed, before they
// are all-reduced.
class StepFaults {
 public:
  StepFaults(int rank, int step) : rank_(rank), step_(step) {}
  void before_forward() const { fault::before_forward(rank_, step_); }
  double loss(double share) const { return armed("nan-loss", rank_, step_) ? std::nan("") : share; }
  double squares(double share) const {
    return armed("nan-grad", rank_, step_) ? std::nan("") : share;
  }

 private:
  int rank_, step_;
};

}  // namespace trident::fault
