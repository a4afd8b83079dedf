// tests/nn_testing.hpp: tools of the nn/ tests: random tensors, a finite-difference gradient
// check, and an in-process all-reduce that lets threads play the ranks of a split vocabulary.
#pragma once

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <random>
#include <vector>

namespace trident::test {

inline std::vector<double> random_vector(std::size_t n, std::mt19937& rng, double lo = -1,
                                         double hi = 1) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

inline std::vector<double> minus(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return d;
}

inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// Relative error ||numeric - analytic|| / max(||numeric||, ||analytic||) of the gradient of the
// scalar objective() with respect to `param`, by central differences of step h on every element
// (tensors up to `samples` elements) or on `samples` random elements. `param` is perturbed in
// place and restored.
template <class Objective>
double gradient_error(std::vector<double>& param, const std::vector<double>& analytic,
                      const Objective& objective, std::size_t samples = 256, double h = 1e-5) {
  std::vector<std::size_t> where;
  if (param.size() <= samples) {
    for (std::size_t i = 0; i < param.size(); ++i) where.push_back(i);
  } else {
    std::mt19937 rng(1234);
    std::uniform_int_distribution<std::size_t> pick(0, param.size() - 1);
    for (std::size_t k = 0; k < samples; ++k) where.push_back(pick(rng));
  }
  double diff2 = 0, num2 = 0, ana2 = 0;
  for (std::size_t i : where) {
    const double saved = param[i];
    param[i] = saved + h;
    const double up = objective();
    param[i] = saved - h;
    const double down = objective();
    param[i] = saved;
    const double numeric = (up - down) / (2 * h);
    diff2 += (numeric - analytic[i]) * (numeric - analytic[i]);
    num2 += numeric * numeric;
    ana2 += analytic[i] * analytic[i];
  }
  const double scale = std::sqrt(std::max(num2, ana2));
  return scale == 0 ? 0 : std::sqrt(diff2) / scale;
}

// An all-reduce among `parties` threads: each calls run(buf, n, op) with its own buf, and every
// buf leaves holding op folded over all of them. Reusable call after call.
class ThreadAllReduce {
 public:
  explicit ThreadAllReduce(int parties) : parties_(parties) {}

  template <class Op>
  void run(double* buf, int n, const Op& op) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (arrived_ == 0)
      partial_.assign(buf, buf + n);
    else
      for (int i = 0; i < n; ++i) partial_[i] = op(partial_[i], buf[i]);
    if (++arrived_ == parties_) {
      result_ = partial_;
      arrived_ = 0;
      ++generation_;
      done_.notify_all();
    } else {
      const long generation = generation_;
      done_.wait(lock, [&] { return generation_ != generation; });
    }
    std::copy(result_.begin(), result_.end(), buf);
  }

 private:
  int parties_;
  int arrived_ = 0;
  long generation_ = 0;
  std::vector<double> partial_, result_;
  std::mutex mutex_;
  std::condition_variable done_;
};

}  // namespace trident::test
