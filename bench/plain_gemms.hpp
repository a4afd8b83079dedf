// bench/plain_gemms.hpp: the baseline every kernel of the benchmarks is held to — the matrix
// products of a layer or of a whole training step as plain GEMM calls, by Eigen's own GEMM and by
// the linked BLAS, and the FLOPs they count.
#pragma once

#include <memory>
#include <vector>

#include <trident/models/gpt2/gpt2.hpp>
#include <trident/plan/compute.hpp>

namespace bench {

using namespace trident;

// C: (M, N) = op(A) op(B), count times: one product of a training step, as a plain Eigen call.
struct Gemm {
  const char* name;
  int M, N, K;
  bool trans_a = false, trans_b = false;
  int count = 1;
  double flops() const { return 2.0 * M * N * K * count; }
};

inline double total_flops(const std::vector<Gemm>& gemms) {
  double f = 0;
  for (const Gemm& g : gemms) f += g.flops();
  return f;
}

// Who computes a plain product: Eigen's own GEMM, or the BLAS linked at configure time
// (backend/cpu/blas.hpp; the same as Eigen when none is).
enum class Engine { eigen, blas };
inline const char* engine_name(Engine e) {
  return e == Engine::eigen ? "eigen" : backend::blas::kName;
}

// Plain products on contiguous row-major matrices: the baseline every kernel is held to.
class PlainGemms {
 public:
  explicit PlainGemms(std::vector<Gemm> gemms, Engine engine = Engine::eigen)
      : gemms_(std::move(gemms)), engine_(engine) {
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
        if constexpr (backend::blas::kHas<float>) {
          if (engine_ == Engine::blas) {
            backend::blas::gemm<float>(g.trans_a, g.trans_b, g.M, g.N, g.K, a_[i].data(),
                                       int(a_[i].cols()), b_[i].data(), int(b_[i].cols()), 0,
                                       c_[i].data(), g.N);
            continue;
          }
        }
        backend::eigen_gemm<float>(backend::view(c_[i].data(), g.M, g.N),
                                   backend::cview(a_[i].data(), a_[i].rows(), a_[i].cols()),
                                   backend::cview(b_[i].data(), b_[i].rows(), b_[i].cols()),
                                   g.trans_a, g.trans_b, 0);
      }
  }
  double flops() const { return total_flops(gemms_); }
  Engine engine() const { return engine_; }

 private:
  std::vector<Gemm> gemms_;
  Engine engine_;
  std::vector<Matrix<float>> a_, b_, c_;
};

// The same products by each engine there is (Eigen, and the linked BLAS if any): the ideal of
// a kernel is the fastest of them.
inline std::vector<std::unique_ptr<PlainGemms>> plain_engines(const std::vector<Gemm>& gemms) {
  std::vector<std::unique_ptr<PlainGemms>> all;
  all.push_back(std::make_unique<PlainGemms>(gemms, Engine::eigen));
  if (backend::blas::kLinked) all.push_back(std::make_unique<PlainGemms>(gemms, Engine::blas));
  return all;
}

// The products of a linear layer x: (N, I) -> (N, O): forward, and backward (dx, dw).
inline std::vector<Gemm> linear_forward_gemms(const char* name, int N, int I, int O) {
  return {{name, N, O, I}};
}
inline std::vector<Gemm> linear_backward_gemms(const char* name, int N, int I, int O) {
  return {{name, N, I, O, false, true}, {name, I, O, N, true, false}};
}
// Causal attention of `pairs` (sequence, head) pairs of seq tokens and head size D, as a GEMM-based
// attention computes it: row blocks [r, r + kCausalRows) against columns [0, r + kCausalRows)
// (forward Q K^T, P V; backward dP = dO V^T, dQ = dS K) and column blocks [c, c + kCausalRows)
// against rows [c, seq) (dV = P^T dO, dK = dS^T Q): no block above the diagonal. nn/attention.hpp's
// fused kernel computes a little less (tiles of 4 rows, columns rounded up to 16). causal =
// false: full seq x seq blocks, as eq. (3) counts.
inline constexpr int kCausalRows = 32;
inline std::vector<Gemm> attention_forward_gemms(int pairs, int seq, int D, bool causal = true) {
  std::vector<Gemm> g;
  const int step = causal ? kCausalRows : seq;
  for (int r = 0; r < seq; r += step) {
    const int rows = std::min(seq, r + step) - r, seen = causal ? r + rows : seq;
    g.push_back({"attention", rows, seen, D, false, true, pairs});
    g.push_back({"attention", rows, D, seen, false, false, pairs});
  }
  return g;
}
inline std::vector<Gemm> attention_backward_gemms(int pairs, int seq, int D, bool causal = true) {
  std::vector<Gemm> g;
  const int step = causal ? kCausalRows : seq;
  for (int r = 0; r < seq; r += step) {
    const int rows = std::min(seq, r + step) - r, seen = causal ? r + rows : seq;
    const int below = causal ? seq - r : seq;  // rows [r, seq) for column block r
    g.push_back({"attention", rows, seen, D, false, true, pairs});
    g.push_back({"attention", rows, D, seen, false, false, pairs});
    g.push_back({"attention", rows, D, below, true, false, pairs});
    g.push_back({"attention", rows, D, below, true, false, pairs});
  }
  return g;
}
// The tied LM head h: (N, C) -> logits (N, V) = h wte^T;
// backward dwte = dlogits^T h, dh = dlogits wte.
inline std::vector<Gemm> head_forward_gemms(int N, int C, int V) {
  return {{"LM head", N, V, C, false, true}};
}
inline std::vector<Gemm> head_backward_gemms(int N, int C, int V) {
  return {{"LM head", V, C, N, true, false}, {"LM head", N, C, V}};
}

// Every product of one single-process training step on N rows (N / seq sequences); attention
// in causal blocks as trident computes it, or (causal = false) in full blocks, as eq. (3) counts.
inline std::vector<Gemm> step_gemms(const gpt2::Config& c, int N, bool causal = true) {
  const int C = c.hidden, seq = c.seq, pairs = N / seq * c.heads, D = c.head_size();
  std::vector<Gemm> all;
  auto add = [&](std::vector<Gemm> g, int times) {
    for (Gemm& x : g) x.count *= times;
    all.insert(all.end(), g.begin(), g.end());
  };
  for (auto* f : {linear_forward_gemms, linear_backward_gemms}) {
    add(f("QKV", N, C, 3 * C), c.layers);
    add(f("proj", N, C, C), c.layers);
    add(f("FC", N, C, 4 * C), c.layers);
    add(f("MLP proj", N, 4 * C, C), c.layers);
  }
  add(attention_forward_gemms(pairs, seq, D, causal), c.layers);
  add(attention_backward_gemms(pairs, seq, D, causal), c.layers);
  add(head_forward_gemms(N, C, c.vocab), 1);
  add(head_backward_gemms(N, C, c.vocab), 1);
  return all;
}

// The GEMM FLOPs of one step without recomputation, plan/compute.hpp's training_flops:
// 72 B s l h^2 (1 + s / (6 h) + V / (12 l h)) (Narayanan et al. 2021, eq. (3) with 3 passes).
inline double step_flops(const gpt2::Config& c, int batch) {
  return plan::training_flops(gpt2::model_spec(c), batch, Recompute::none);
}

}  // namespace bench
