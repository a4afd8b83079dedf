// trident/testing/parity.hpp: the parity kit — a model (the library's or a host app's) on a list
// of meshes against the same model on one process, on the same data and initial weights, in
// double: every step's loss and gradient norm and, after the steps, every parameter element each
// rank holds (by global index), within a relative tolerance (1e-10: the parallel run differs in
// summation order only). What trident promises for its own models, handed to its users.
//
//   testing::ParityReport r = testing::check_parity(world, model, data, base);  // every axis
//   if (world.rank() == 0) std::printf("%s", r.text().c_str());
//   return r.ok() ? 0 : 1;
//
// A case the world is too small for, or that the model refuses (its validate: heads not
// divisible by TP, say), is listed as refused with the reason, not failed; ok() needs no
// failure and at least one pass. Collective over `world`; every rank gets the same report.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "../backend/cpu/threads.hpp"
#include "../backend/device_buffer.hpp"
#include "../core/environment.hpp"
#include "../train/trainer.hpp"
#include "parity_cases.hpp"

namespace trident::testing {

// One case's outcome: the largest relative differences over the steps and the parameters.
struct ParityOutcome {
  enum class Status { passed, failed, refused };
  std::string name;
  Status status = Status::refused;
  std::string reason;  // refused: why; failed: what exceeded the tolerance
  int ranks = 1;
  double loss = 0, norm = 0, params = 0;  // worst |run - one process| / |one process|
  std::string where;                      // the parameter with the largest difference
};

struct ParityReport {
  std::vector<ParityOutcome> cases;
  int steps = 0;
  double tolerance = 0;
  int count(ParityOutcome::Status s) const {
    return static_cast<int>(std::count_if(cases.begin(), cases.end(),
                                          [&](const ParityOutcome& o) { return o.status == s; }));
  }
  bool ok() const {
    return count(ParityOutcome::Status::failed) == 0 && count(ParityOutcome::Status::passed) > 0;
  }
  // A table: case, ranks, status, the three differences (or the reason), then a verdict line.
  std::string text() const {
    std::string out;
    char line[512];
    std::snprintf(line, sizeof line, "%-34s %5s  %-7s %10s %10s %10s  %s\n", "case", "ranks",
                  "status", "loss", "norm", "params", "largest in / reason");
    out += line;
    for (const ParityOutcome& o : cases) {
      const char* s = o.status == ParityOutcome::Status::passed   ? "passed"
                      : o.status == ParityOutcome::Status::failed ? "FAILED"
                                                                  : "refused";
      if (o.status == ParityOutcome::Status::refused)
        std::snprintf(line, sizeof line, "%-34s %5d  %-7s %32s  %s\n", o.name.c_str(), o.ranks, s,
                      "", o.reason.c_str());
      else
        std::snprintf(line, sizeof line, "%-34s %5d  %-7s %10.2e %10.2e %10.2e  %s\n",
                      o.name.c_str(), o.ranks, s, o.loss, o.norm, o.params,
                      (o.status == ParityOutcome::Status::failed ? o.reason : o.where).c_str());
      out += line;
    }
    std::snprintf(line, sizeof line,
                  "%d passed, %d failed, %d refused: each against one process over %d steps "
                  "(loss, gradient norm, parameters; relative, tolerance %.0e): %s\n",
                  count(ParityOutcome::Status::passed), count(ParityOutcome::Status::failed),
                  count(ParityOutcome::Status::refused), steps, tolerance,
                  ok() ? "parity" : "NO PARITY");
    return out + line;
  }
};

// Unit u of chunk c's parameters as double, on the host (the store's memory is its backend's).
template <class Trainer>
std::vector<double> unit_parameters(Trainer& t, int c, int u) {
  auto& st = t.chunk(c).store();
  using B = typename Trainer::Backend;
  const auto host = backend::host_copy<B>(st.gather_parameters(u), st.padded(u));
  st.release_parameters(u);
  return std::vector<double>(host.begin(), host.end());
}

// Every parameter of a one-process trainer (its one chunk holds the whole model), by name.
template <class Trainer>
std::map<std::string, std::vector<double>> whole_parameters(Trainer& t) {
  std::map<std::string, std::vector<double>> out;
  auto& st = t.chunk(0).store();
  for (int u = 0; u < st.size(); ++u) {
    const std::vector<double> p = unit_parameters(t, 0, u);
    for (const LocalParam& lp : st.layout(u).params)
      out[lp.spec.name].assign(p.begin() + lp.offset, p.begin() + lp.offset + lp.numel);
  }
  return out;
}

// How far the parameter elements this rank holds are from `whole` (by global index; padding
// against 0): the largest relative difference of a tensor (over its largest |value|) and its
// name, the elements compared, and the squared 2-norms of the difference and of `whole` over
// the elements counted(chunk, unit, param) gives this rank to count (each element once over all
// ranks, for a whole-model norm: runs whose rounding differs from one process's, float, bf16).
struct ParameterDifference {
  double worst = 0;
  std::string where;
  std::size_t compared = 0;
  double diff2 = 0, norm2 = 0;
};
template <class Trainer, class Counted>
ParameterDifference compare_parameters(Trainer& run,
                                       const std::map<std::string, std::vector<double>>& whole,
                                       Counted&& counted) {
  ParameterDifference d;
  for (int ch = 0; ch < run.chunks(); ++ch) {
    auto& st = run.chunk(ch).store();
    for (int u = 0; u < st.size(); ++u) {
      const std::vector<double> p = unit_parameters(run, ch, u);
      for (const LocalParam& lp : st.layout(u).params) {
        const std::vector<double>& want = whole.at(lp.spec.name);
        const bool count = counted(ch, u, lp);
        double scale = 0, diff = 0;
        for (double x : want) scale = std::max(scale, std::abs(x));
        const ShardLayout& l = lp.layout;
        for (std::int64_t i = 0; i < l.local_rows(); ++i)
          for (std::int64_t j = 0; j < l.local_cols(); ++j, ++d.compared) {
            const std::int64_t g = l.global_offset(i, j, l.rank());
            const double got = p[lp.offset + i * l.local_cols() + j], ref = g < 0 ? 0.0 : want[g];
            diff = std::max(diff, std::abs(got - ref));
            if (count) {
              d.diff2 += (got - ref) * (got - ref);
              d.norm2 += ref * ref;
            }
          }
        const double relative = scale > 0 ? diff / scale : diff;
        if (relative > d.worst || d.where.empty()) {
          d.worst = std::max(d.worst, relative);
          d.where = lp.spec.name;
        }
      }
    }
  }
  return d;
}
template <class Trainer>
ParameterDifference compare_parameters(Trainer& run,
                                       const std::map<std::string, std::vector<double>>& whole) {
  return compare_parameters(run, whole, [](int, int, const LocalParam&) { return false; });
}

namespace detail {
// What one process does on the base run: every step's loss and norm, the parameters after.
struct Reference {
  std::vector<double> losses, norms;
  std::map<std::string, std::vector<double>> params;
};

template <class M>
Reference run_reference(const Comm& world, const M& model, const TokenSource& data,
                        const TrainOptions& base, int steps) {
  Reference ref;
  const Comm self = world.split(world.rank(), 0, "parity-self");
  Trainer<M, double> t(self, model, single_process(base), data);
  for (int s = 0; s < steps; ++s) {
    const StepResult r = t.step();
    ref.losses.push_back(r.loss);
    ref.norms.push_back(r.grad_norm);
  }
  ref.params = whole_parameters(t);
  return ref;
}

// Runs one case on the first ranks of world (the others wait) and fills o's differences.
template <class M, class B>
void run_case(const Comm& world, const M& model, const TokenSource& data, const ParityCase& c,
              const Reference& ref, int steps, double tol, ParityOutcome& o) {
  o.ranks = c.run.mesh.product();
  std::string refused = o.ranks > world.size()
                            ? "needs " + std::to_string(o.ranks) + " ranks, the world has " +
                                  std::to_string(world.size())
                            : std::string();
  double diffs[3] = {0, 0, 0};
  std::string where;
  if (refused.empty()) {
    const Comm sub =
        world.split(world.rank() < o.ranks ? 0 : Comm::kUndefined, world.rank(), "parity");
    if (sub.valid()) try {
        Trainer<M, double, double, B> run(sub, model, c.run, data);
        for (int s = 0; s < steps; ++s) {
          const StepResult r = run.step();
          diffs[0] = std::max(diffs[0], std::abs(r.loss - ref.losses[s]) / std::abs(ref.losses[s]));
          diffs[1] = std::max(diffs[1], std::abs(r.grad_norm - ref.norms[s]) / ref.norms[s]);
        }
        const ParameterDifference d = compare_parameters(run, ref.params);
        diffs[2] = d.compared ? d.worst : INFINITY;
        where = d.compared ? d.where : "no parameter compared";
      } catch (const Error& e) {  // the same on every rank of the case (validate is pure)
        refused = e.what();
      }
  }
  refused = trident::broadcast_text(world, refused, 0);  // rank 0 is in every case
  const double mine = diffs[2];
  world.all_reduce(Span<double>(diffs, 3), ReduceOp::max);
  // the parameter with the largest difference: named by the lowest rank that has it
  const int holder =
      world.all_reduce_value(mine == diffs[2] ? world.rank() : world.size(), ReduceOp::min);
  o.where = trident::broadcast_text(world, where, holder < world.size() ? holder : 0);
  o.loss = diffs[0];
  o.norm = diffs[1];
  o.params = diffs[2];
  if (!refused.empty()) {
    o.status = ParityOutcome::Status::refused;
    o.reason = refused;
    return;
  }
  const bool pass = o.loss <= tol && o.norm <= 10 * tol && o.params <= tol;
  o.status = pass ? ParityOutcome::Status::passed : ParityOutcome::Status::failed;
  if (!pass) o.reason = "beyond the tolerance; largest parameter difference in " + o.where;
}
}  // namespace detail

// Runs every case for `steps` steps and compares it with one process running the base run
// (mesh 1 x 1 x 1, one microbatch, no ZeRO). Tolerance: relative, on the loss and the
// parameters; the gradient norm gets 10x (a square root of a sum of squares). B: the backend
// of the cases (the one-process run is on the CPU).
template <class M, class B = backend::Cpu>
ParityReport check_parity(const Comm& world, const M& model, const TokenSource& data,
                          const TrainOptions& base, const std::vector<ParityCase>& cases,
                          int steps = 3, double tol = 1e-10) {
  if (!threads_configured()) configure_threads(world);  // before any Trainer on a sub-group
  require(steps >= 1, "check_parity: at least one step");
  ParityReport report;
  report.steps = steps;
  report.tolerance = tol;
  const detail::Reference ref = detail::run_reference(world, model, data, base, steps);
  for (const ParityCase& c : cases) {
    ParityOutcome o;
    o.name = c.name;
    detail::run_case<M, B>(world, model, data, c, ref, steps, tol, o);
    report.cases.push_back(o);
  }
  return report;
}

// Every case the world's size allows (parity_cases.hpp).
template <class M, class B = backend::Cpu>
ParityReport check_parity(const Comm& world, const M& model, const TokenSource& data,
                          const TrainOptions& base, int steps = 3, double tol = 1e-10) {
  return check_parity<M, B>(world, model, data, base, default_cases(model, base, world.size()),
                            steps, tol);
}

}  // namespace trident::testing
