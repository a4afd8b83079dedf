// bench/bench_util.hpp: what the model, tp, pp and zero benchmarks share — the bench model, the
// FLOPs of a training step, plain Eigen GEMMs as the baseline, and interleaved median timing.
//
// Absolute times on a shared 2-core machine are noise; ratios measured in one run hold. So every
// benchmark runs its variants interleaved — repetition i runs each variant once, the order
// rotating with i — and reports medians side by side with their ratio.
#pragma once

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <trident/train/trainer.hpp>

namespace bench {

using namespace trident;

// The bench model: V=4096, T=128, L=4, C=256, 8 heads; a global batch of 8 sequences.
inline GPTConfig bench_model() {
  return {4096, 128, 4, 256, 8, 1234};
}
inline constexpr int kBatch = 8;

inline TrainOptions bench_options(MeshShape mesh = {1, 1, 1}, int microbatches = 1) {
  TrainOptions o;
  o.model = bench_model();
  o.batch = kBatch;
  o.mesh = mesh;
  o.microbatches = microbatches;
  o.optimizer.lr = 1e-3;
  o.optimizer.steps = 1000;
  return o;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.empty() ? 0 : v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// A variant measures itself once and returns its seconds (so that an MPI variant can take the
// slowest rank's time, or a trainer its step time).
using Variant = std::function<double()>;

// Seconds of f() on this rank.
inline Variant timed(std::function<void()> f) {
  return [f] {
    const double t0 = detail::now_seconds();
    f();
    return detail::now_seconds() - t0;
  };
}

// Each variant's median seconds over interleaved repetitions, after one warm-up round; as many
// repetitions as fill about `seconds` (at least 5). Collective over `comm` (the ranks agree on
// the count).
inline std::vector<double> interleaved(const Comm& comm, double seconds,
                                       const std::vector<Variant>& variants) {
  const std::size_t n = variants.size();
  double warm = 0;
  for (const Variant& v : variants) warm += v();  // warm-up: caches, allocator, page faults
  warm = comm.all_reduce_value(warm, ReduceOp::max);
  const int reps = std::clamp(static_cast<int>(seconds / std::max(warm, 1e-9)), 5, 1000);
  std::vector<std::vector<double>> times(n);
  for (int i = 0; i < reps; ++i)
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t which = (k + i) % n;
      times[which].push_back(variants[which]());
    }
  std::vector<double> medians;
  for (auto& t : times) medians.push_back(median(t));
  return medians;
}

// C: (M, N) = op(A) op(B), count times: one product of a training step, as a plain Eigen call.
struct Gemm {
  const char* name;
  int M, N, K;
  bool trans_a = false, trans_b = false;
  int count = 1;
  double flops() const { return 2.0 * M * N * K * count; }
};

// Plain Eigen products on contiguous row-major matrices: the baseline every kernel is held to.
class PlainGemms {
 public:
  explicit PlainGemms(std::vector<Gemm> gemms) : gemms_(std::move(gemms)) {
    for (const Gemm& g : gemms_) {
      a_.push_back(Matrix<float>::Random(g.trans_a ? g.K : g.M, g.trans_a ? g.M : g.K));
      b_.push_back(Matrix<float>::Random(g.trans_b ? g.N : g.K, g.trans_b ? g.K : g.N));
      c_.push_back(Matrix<float>::Zero(g.M, g.N));
    }
  }
  void run() {
    for (std::size_t i = 0; i < gemms_.size(); ++i)
      for (int r = 0; r < gemms_[i].count; ++r) {
        const Gemm& g = gemms_[i];
        if (!g.trans_a && !g.trans_b) c_[i].noalias() = a_[i] * b_[i];
        if (!g.trans_a && g.trans_b) c_[i].noalias() = a_[i] * b_[i].transpose();
        if (g.trans_a && !g.trans_b) c_[i].noalias() = a_[i].transpose() * b_[i];
        if (g.trans_a && g.trans_b) c_[i].noalias() = a_[i].transpose() * b_[i].transpose();
      }
  }
  double flops() const {
    double f = 0;
    for (const Gemm& g : gemms_) f += g.flops();
    return f;
  }

 private:
  std::vector<Gemm> gemms_;
  std::vector<Matrix<float>> a_, b_, c_;
};

// The products of a linear layer x: (N, I) -> (N, O): forward, and backward (dx, dw).
inline std::vector<Gemm> linear_forward_gemms(const char* name, int N, int I, int O) {
  return {{name, N, O, I}};
}
inline std::vector<Gemm> linear_backward_gemms(const char* name, int N, int I, int O) {
  return {{name, N, I, O, false, true}, {name, I, O, N, true, false}};
}
// Causal attention of `pairs` (sequence, head) pairs of S tokens and head size D, computed in
// full S x S blocks: forward Q K^T, P V; backward dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q.
inline std::vector<Gemm> attention_forward_gemms(int pairs, int S, int D) {
  return {{"attention", S, S, D, false, true, pairs}, {"attention", S, D, S, false, false, pairs}};
}
inline std::vector<Gemm> attention_backward_gemms(int pairs, int S, int D) {
  return {{"attention", S, D, S, true, false, pairs},
          {"attention", S, S, D, false, true, pairs},
          {"attention", S, D, S, false, false, pairs},
          {"attention", S, D, S, true, false, pairs}};
}
// The tied LM head h: (N, C) -> logits (N, V) = h wte^T; backward dwte = dlogits^T h, dh = dlogits
// wte.
inline std::vector<Gemm> head_forward_gemms(int N, int C, int V) {
  return {{"LM head", N, V, C, false, true}};
}
inline std::vector<Gemm> head_backward_gemms(int N, int C, int V) {
  return {{"LM head", V, C, N, true, false}, {"LM head", N, C, V}};
}

// Every product of one training step of `layers` blocks on one tensor-parallel rank of t (the
// local shapes of Megatron's split), N = rows of the microbatch, `microbatches` times.
inline std::vector<Gemm> step_gemms(const GPTConfig& c, int layers, bool head, int N, int t,
                                    int microbatches) {
  const int C = c.hidden, S = c.seq, pairs = N / S * c.heads / t, D = c.head_size();
  std::vector<Gemm> all;
  auto add = [&](std::vector<Gemm> g) {
    for (Gemm& x : g) x.count *= layers * microbatches;
    all.insert(all.end(), g.begin(), g.end());
  };
  for (auto* f : {linear_forward_gemms, linear_backward_gemms}) {
    add(f("QKV", N, C, 3 * C / t));
    add(f("proj", N, C / t, C));
    add(f("FC", N, C, 4 * C / t));
    add(f("MLP proj", N, 4 * C / t, C));
  }
  add(attention_forward_gemms(pairs, S, D));
  add(attention_backward_gemms(pairs, S, D));
  if (head)
    for (auto g : {head_forward_gemms(N, C, c.vocab / t), head_backward_gemms(N, C, c.vocab / t)})
      for (Gemm& x : g) all.push_back({x.name, x.M, x.N, x.K, x.trans_a, x.trans_b, microbatches});
  return all;
}

// Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU Clusters"),
// eq. (3) without activation recomputation (3 passes instead of 4): the GEMM FLOPs of one step,
// 72 B s l h^2 (1 + s / (6 h) + V / (12 l h)) — i.e. 6 x (12 l h^2 + V h) x tokens (Kaplan et
// al. 2020, Table 1: 2 N per token forward, twice that backward) plus the attention's
// 12 l s^2 h per sequence (Q K^T and P V, full s x s blocks as computed here).
inline double step_flops(const GPTConfig& c, int batch) {
  const double B = batch, s = c.seq, l = c.layers, h = c.hidden, V = c.vocab;
  return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
}

// The slowest rank's value (all ranks get it). Collective over `comm`.
inline double slowest(const Comm& comm, double seconds) {
  return comm.all_reduce_value(seconds, ReduceOp::max);
}

// The single-process baseline of a parallel benchmark: a trainer on a 1-rank communicator of
// world rank 0, while the other ranks wait (trident's waits yield the CPU).
struct SingleProcess {
  Comm comm;
  std::unique_ptr<Trainer<float>> trainer;

  SingleProcess(const Comm& world, const TrainOptions& o)
      : comm(world.split(world.rank() == 0 ? 0 : MPI_UNDEFINED, 0, "single")) {
    if (comm.valid()) trainer = std::make_unique<Trainer<float>>(comm, o, TokenSource::synthetic(o.model.vocab));
  }
  // One step: rank 0's seconds, on every rank of `world`. Collective over `world`.
  double step(const Comm& world) { return slowest(world, trainer ? trainer->step().seconds : 0.0); }
};

// One step of a trainer over all of `world`: the slowest rank's seconds. Collective.
inline double step_seconds(const Comm& world, Trainer<float>& t) {
  return slowest(world, t.step().seconds);
}

// Tokens/s of the single process and of each parallel trainer, interleaved step by step, as a
// table: one row per trainer, with its speedup over the single process. Collective.
inline void training_table(const Comm& world, double seconds, const TrainOptions& single_options,
                           const std::vector<std::pair<std::string, Trainer<float>*>>& trainers) {
  SingleProcess single(world, single_options);
  std::vector<Variant> variants{[&] { return single.step(world); }};
  for (const auto& [name, t] : trainers) variants.push_back([&, t = t] { return step_seconds(world, *t); });
  const auto med = interleaved(world, seconds, variants);
  const double tokens = double(single_options.batch) * single_options.model.seq;
  if (world.rank() != 0) return;
  std::printf("%-24s %10s %10s %10s\n", "training (same batch)", "step_ms", "tokens/s", "speedup");
  std::printf("%-24s %10.1f %10.0f %10.2f\n", "single process", med[0] * 1e3, tokens / med[0], 1.0);
  for (std::size_t k = 0; k < trainers.size(); ++k)
    std::printf("%-24s %10.1f %10.0f %10.2f\n", trainers[k].first.c_str(), med[k + 1] * 1e3,
                tokens / med[k + 1], med[0] / med[k + 1]);
  std::fflush(stdout);
}

}  // namespace bench
