// nn/ kernels of a Llama-style decoder: RMSNorm, RoPE, SwiGLU and grouped-query attention. Every
// forward against direct loops of its formula on tiny sizes, every backward against central
// finite differences of L = sum(R * out) for a fixed random R (double). Parameter gradients start
// non-zero (they must accumulate); input gradients start as garbage (they must be overwritten).
#include <trident/nn/nn.hpp>

#include <cmath>

#include "mpi_test.hpp"
#include "nn_testing.hpp"

using namespace trident;
using namespace trident::test;
using Vec = std::vector<double>;

namespace {
constexpr double kTolerance = 1e-6;
constexpr double kGarbage = 1e6;  // what input gradients hold before a backward
}  // namespace

TEST_CASE("rmsnorm: forward against loops, backward (x, weight) against FD, B + W = fused") {
  std::mt19937 rng(11);
  const int N = 6, C = 70;  // C = 70: a partial last column block (B::column_width, whole 16s)
  const double eps = 1e-5;
  Vec x = random_vector(N * C, rng, -2, 3), weight = random_vector(C, rng);
  Vec out(N * C), rstd(N, kGarbage);
  nn::rmsnorm_forward(out.data(), rstd.data(), x.data(), weight.data(), N, C, eps);
  double err = 0;
  for (int n = 0; n < N; ++n) {
    double ms = 0;
    for (int c = 0; c < C; ++c) ms += x[n * C + c] * x[n * C + c] / C;
    const double r = 1 / std::sqrt(ms + eps);
    CHECK(std::abs(rstd[n] - r) < 1e-14);
    for (int c = 0; c < C; ++c)
      err = std::max(err, std::abs(out[n * C + c] - x[n * C + c] * r * weight[c]));
  }
  CHECK(err < 1e-13);

  const Vec R = random_vector(N * C, rng), dw0 = random_vector(C, rng);
  Vec dx(N * C, kGarbage), dw = dw0;
  nn::rmsnorm_backward(dx.data(), dw.data(), R.data(), x.data(), weight.data(), rstd.data(), N, C);
  const auto L = [&] {
    Vec y(N * C), r(N);
    nn::rmsnorm_forward(y.data(), r.data(), x.data(), weight.data(), N, C, eps);
    return dot(R, y);
  };
  CHECK(gradient_error(x, dx, L, x.size()) < kTolerance);
  CHECK(gradient_error(weight, minus(dw, dw0), L) < kTolerance);

  // Zero-bubble's split (Qi et al. 2023): B writes only dx, W only dweight (weight unread).
  Vec dx_b(N * C, kGarbage), dw_b = dw0;
  nn::rmsnorm_backward(dx_b.data(), dw_b.data(), R.data(), x.data(), weight.data(), rstd.data(), N,
                       C, nn::BackwardPart::input);
  CHECK(dx_b == dx);
  CHECK(dw_b == dw0);
  Vec untouched(N * C, kGarbage);
  nn::rmsnorm_backward(untouched.data(), dw_b.data(), R.data(), x.data(),
                       static_cast<const double*>(nullptr), rstd.data(), N, C,
                       nn::BackwardPart::weight);
  CHECK(dw_b == dw);
  CHECK(untouched == Vec(N * C, kGarbage));
}

TEST_CASE("rope: rotate-half against the formula, v untouched, backward against FD") {
  std::mt19937 rng(12);
  const int seq = 5, B = 2, N = seq * B, H = 3, KV = 1, D = 6, W = (H + 2 * KV) * D;
  const double theta = 50;  // not the default: the base must be used
  const nn::RopeTable<double> table(seq, D, theta);
  Vec x = random_vector(N * W, rng);
  Vec y = x;
  nn::rope_forward(y.data(), table, N, B, H + KV, W);  // q and k heads
  double err = 0;
  for (int r = 0; r < N; ++r) {
    const int p = r / B;  // rows [s, b]
    for (int h = 0; h < H + 2 * KV; ++h)
      for (int i = 0; i < D / 2; ++i) {
        const int lo = r * W + h * D + i, hi = lo + D / 2;
        double want_lo = x[lo], want_hi = x[hi];
        if (h < H + KV) {  // RoFormer: pair (i, i + D/2) rotated by p * theta^(-2i/D)
          const double a = p * std::pow(theta, -2.0 * i / D);
          want_lo = x[lo] * std::cos(a) - x[hi] * std::sin(a);
          want_hi = x[hi] * std::cos(a) + x[lo] * std::sin(a);
        }
        err = std::max({err, std::abs(y[lo] - want_lo), std::abs(y[hi] - want_hi)});
      }
  }
  CHECK(err < 1e-14);
  // Relative positions: with the same q and k vectors at every position, the score q_s . k_t
  // after the rotation depends on s - t only.
  Vec qk(N * W, 0.0);
  for (int r = 0; r < N; ++r)
    for (int d = 0; d < 2 * D; ++d) qk[r * W + d] = x[d];  // q: head 0, k: head 1
  nn::rope_forward(qk.data(), table, N, B, 2, W);
  const auto score = [&](int s, int t) {  // sequence b = 0
    double sum = 0;
    for (int d = 0; d < D; ++d) sum += qk[s * B * W + d] * qk[t * B * W + D + d];
    return sum;
  };
  CHECK(std::abs(score(3, 1) - score(4, 2)) < 1e-13);
  CHECK(std::abs(score(2, 2) - score(0, 0)) < 1e-13);
  CHECK(std::abs(score(3, 1) - score(1, 3)) > 1e-3);  // but not symmetric: the angle has a sign

  const Vec R = random_vector(N * W, rng);
  Vec dx = R;
  nn::rope_backward(dx.data(), table, N, B, H + KV, W);
  const auto L = [&] {
    Vec z = x;
    nn::rope_forward(z.data(), table, N, B, H + KV, W);
    return dot(R, z);
  };
  CHECK(gradient_error(x, dx, L, x.size()) < kTolerance);
  Vec back = y;  // the backward is the inverse rotation: it undoes the forward
  nn::rope_backward(back.data(), table, N, B, H + KV, W);
  CHECK(max_abs_diff(back, x) < 1e-14);
}

void check_swiglu(int N, int F) {
  CAPTURE(F);
  std::mt19937 rng(13);
  Vec ab = random_vector(N * 2 * F, rng, -4, 4);  // one (N, 2F) output: [gate | up] per row
  Vec out(N * F);
  nn::swiglu_forward(out.data(), ab.data(), ab.data() + F, N, F, 2 * F);
  double err = 0;
  for (int n = 0; n < N; ++n)
    for (int f = 0; f < F; ++f) {
      const double a = ab[n * 2 * F + f], b = ab[n * 2 * F + F + f];
      err = std::max(err, std::abs(out[n * F + f] - a / (1 + std::exp(-a)) * b));
    }
  CHECK(err < 1e-14);
  Vec a(N * F), b(N * F), out2(N * F);  // the same as two (N, F) buffers
  for (int n = 0; n < N; ++n)
    for (int f = 0; f < F; ++f) {
      a[n * F + f] = ab[n * 2 * F + f];
      b[n * F + f] = ab[n * 2 * F + F + f];
    }
  nn::swiglu_forward(out2.data(), a.data(), b.data(), N, F, F);
  CHECK(max_abs_diff(out2, out) < 1e-14);  // vectorised exp: rounding may follow alignment

  const Vec R = random_vector(N * F, rng);
  Vec dab(N * 2 * F, kGarbage);
  nn::swiglu_backward(dab.data(), dab.data() + F, R.data(), ab.data(), ab.data() + F, N, F, 2 * F);
  const auto L = [&] {
    Vec y(N * F);
    nn::swiglu_forward(y.data(), ab.data(), ab.data() + F, N, F, 2 * F);
    return dot(R, y);
  };
  CHECK(gradient_error(ab, dab, L, 300) < kTolerance);  // da and db: all, or 300 samples
  double err_d = 0;  // every element against the formula that FD checks (all of a row's chunks)
  for (int n = 0; n < N; ++n)
    for (int f = 0; f < F; ++f) {
      const double a = ab[n * 2 * F + f], b = ab[n * 2 * F + F + f], g = R[n * F + f];
      const double sig = 1 / (1 + std::exp(-a));
      err_d = std::max({err_d, std::abs(dab[n * 2 * F + f] - g * b * sig * (1 + a * (1 - sig))),
                        std::abs(dab[n * 2 * F + F + f] - g * a * sig)});
    }
  CHECK(err_d < 1e-13);
  Vec in_place = ab;
  nn::swiglu_backward(in_place.data(), in_place.data() + F, R.data(), in_place.data(),
                      in_place.data() + F, N, F, 2 * F);
  CHECK(in_place == dab);
}

// F = 7, and F over one chunk of a row (nn::kChunk) for the backward's chunks.
TEST_CASE("swiglu: side by side [a | b] and in two buffers, backward against FD, in place") {
  check_swiglu(5, 7);
  check_swiglu(2, int(nn::kChunk) + 5);
}

// Grouped-query attention (B = 2, H = 4, D = 3) equals multi-head attention with each K, V head
// copied to its group's query heads: the same forward and dQ, and dK, dV the sums over each group
// (to rounding: the order of a product's sums may depend on its buffers' alignment).
void check_gqa_as_mha(int seq, int KV, const Vec& qkv, const Vec& out, const Vec& probs,
                      const Vec& R, const Vec& dqkv) {
  const int B = 2, H = 4, D = 3, W = (H + 2 * KV) * D, group = H / KV;
  const int Wm = 3 * H * D;
  Vec mha(seq * B * Wm);
  for (int r = 0; r < seq * B; ++r)
    for (int h = 0; h < H; ++h)
      for (int d = 0; d < D; ++d) {
        mha[r * Wm + h * D + d] = qkv[r * W + h * D + d];
        mha[r * Wm + (H + h) * D + d] = qkv[r * W + (H + h / group) * D + d];
        mha[r * Wm + (2 * H + h) * D + d] = qkv[r * W + (H + KV + h / group) * D + d];
      }
  Vec out_m(out.size()), probs_m(probs.size(), kGarbage), dmha(mha.size(), kGarbage);
  nn::attention_forward(out_m.data(), probs_m.data(), mha.data(), B, seq, H, D);
  CHECK(max_abs_diff(out_m, out) < 1e-14);
  CHECK(max_abs_diff(probs_m, probs) < 1e-14);
  nn::attention_backward(dmha.data(), R.data(), mha.data(), probs_m.data(), B, seq, H, D);
  double err_q = 0, err_kv = 0;
  for (int r = 0; r < seq * B; ++r)
    for (int d = 0; d < D; ++d) {
      for (int h = 0; h < H; ++h)
        err_q = std::max(err_q, std::abs(dmha[r * Wm + h * D + d] - dqkv[r * W + h * D + d]));
      for (int g = 0; g < KV; ++g) {
        double dk = 0, dv = 0;
        for (int h = g * group; h < (g + 1) * group; ++h) {
          dk += dmha[r * Wm + (H + h) * D + d];
          dv += dmha[r * Wm + (2 * H + h) * D + d];
        }
        err_kv = std::max({err_kv, std::abs(dk - dqkv[r * W + (H + g) * D + d]),
                           std::abs(dv - dqkv[r * W + (H + KV + g) * D + d])});
      }
    }
  CHECK(err_q < 1e-14);
  CHECK(err_kv < 1e-13);
}

// Grouped-query attention over seq tokens, H = 4 query heads and KV key/value heads: probabilities
// and output against loops (query head h reads K, V head h / (H / KV)), backward against FD.
void check_gqa(int seq, int KV) {
  CAPTURE(seq);
  CAPTURE(KV);
  std::mt19937 rng(14);
  const int B = 2, H = 4, D = 3, W = (H + 2 * KV) * D, group = H / KV;
  Vec qkv = random_vector(seq * B * W, rng, -2, 2);
  Vec out(seq * B * H * D), probs(B * H * seq * seq, kGarbage);
  nn::attention_forward(out.data(), probs.data(), qkv.data(), B, seq, H, KV, D);
  double err_p = 0, err_o = 0;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int s = 0; s < seq; ++s) {
        const int g = h / group;
        const auto q = [&](int t, int d) { return qkv[(t * B + b) * W + h * D + d]; };
        const auto k = [&](int t, int d) { return qkv[(t * B + b) * W + (H + g) * D + d]; };
        const auto v = [&](int t, int d) { return qkv[(t * B + b) * W + (H + KV + g) * D + d]; };
        Vec p(seq, 0.0);
        double sum = 0;
        for (int t = 0; t <= s; ++t) {
          double score = 0;
          for (int d = 0; d < D; ++d) score += q(s, d) * k(t, d);
          sum += (p[t] = std::exp(score / std::sqrt(double(D))));
        }
        for (int t = 0; t < seq; ++t) {
          if (t >= nn::attention_detail::row_columns(s, seq)) break;  // not written, never read
          const double got = probs[((b * H + h) * seq + s) * seq + t];
          if (t > s) CHECK(got == 0);  // causal
          err_p = std::max(err_p, std::abs(got - p[t] / sum));
        }
        for (int d = 0; d < D; ++d) {
          double o = 0;
          for (int t = 0; t <= s; ++t) o += p[t] / sum * v(t, d);
          err_o = std::max(err_o, std::abs(o - out[(s * B + b) * H * D + h * D + d]));
        }
      }
  CHECK(err_p < 1e-14);
  CHECK(err_o < 1e-14);

  const Vec R = random_vector(out.size(), rng);
  Vec dqkv(qkv.size(), kGarbage);
  nn::attention_backward(dqkv.data(), R.data(), qkv.data(), probs.data(), B, seq, H, KV, D);
  const auto L = [&] {
    Vec y(out.size()), p(probs.size());
    nn::attention_forward(y.data(), p.data(), qkv.data(), B, seq, H, KV, D);
    return dot(R, y);
  };
  CHECK(gradient_error(qkv, dqkv, L, 400) < kTolerance);  // every element up to 400, else 400

  check_gqa_as_mha(seq, KV, qkv, out, probs, R, dqkv);
}

// seq = 5: single query rows; seq = 40: tiles of 8 rows (nn::attention_detail::kTile), rows ending
// inside a 16-column chunk. KV = H is GPT-2's multi-head attention, KV = 1 multi-query attention.
TEST_CASE("grouped-query attention: KV = 4, 2, 1 of H = 4 against loops, backward against FD") {
  for (int KV : {4, 2, 1}) {
    check_gqa(5, KV);
    check_gqa(40, KV);
  }
}
