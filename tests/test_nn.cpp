// nn/: every backward against central finite differences of L = sum(R * out) for a fixed random R
// (double), every forward against direct loops on tiny sizes, and the vocabulary-split
// cross-entropy against the unsplit one. Parameter gradients start non-zero (they must
// accumulate); input gradients start as garbage (they must be overwritten).
#include <trident/backend/cpu/gemm.hpp>
#include <trident/nn/nn.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>

#include "mpi_test.hpp"
#include "nn_testing.hpp"

using namespace trident;
using namespace trident::test;
using Vec = std::vector<double>;

namespace {
constexpr double kTolerance = 1e-6;
constexpr double kGarbage = 1e6;  // what input gradients hold before a backward
}  // namespace

TEST_CASE("gemm: every transpose, beta 0 / 1 / 0.5, strided views, against loops") {
  std::mt19937 rng(1);
  const int M = 5, N = 4, K = 3, lda = 9, ldb = 7, ldc = 6;  // views inside wider buffers
  const Vec A = random_vector(std::max(M, K) * lda, rng),
            B = random_vector(std::max(N, K) * ldb, rng);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (double beta : {0.0, 1.0, 0.5}) {
        Vec C = random_vector(M * ldc, rng);
        if (beta == 0) C.assign(C.size(), std::numeric_limits<double>::quiet_NaN());
        const Vec C0 = C;
        // op(A): (M, K) stored (M, K) or (K, M); op(B): (K, N) stored (K, N) or (N, K)
        const auto a = backend::cview(A.data(), ta ? K : M, ta ? M : K, lda);
        const auto b = backend::cview(B.data(), tb ? N : K, tb ? K : N, ldb);
        backend::gemm(backend::view(C.data(), M, N, ldc), a, b, ta, tb, beta);
        double err = 0;
        for (int i = 0; i < M; ++i)
          for (int j = 0; j < ldc; ++j) {
            if (j >= N) {  // outside the view: untouched
              CHECK(std::isnan(C0[i * ldc + j]) == std::isnan(C[i * ldc + j]));
              continue;
            }
            double s = beta == 0 ? 0 : beta * C0[i * ldc + j];
            for (int k = 0; k < K; ++k) s += (ta ? a(k, i) : a(i, k)) * (tb ? b(j, k) : b(k, j));
            err = std::max(err, std::abs(s - C[i * ldc + j]));
          }
        INFO("trans_a=", ta, " trans_b=", tb, " beta=", beta);
        CHECK(err < 1e-14);
      }
}

TEST_CASE("linear: forward against loops, backward against finite differences") {
  std::mt19937 rng(2);
  const int N = 6, I = 5, O = 4;
  Vec x = random_vector(N * I, rng), w = random_vector(I * O, rng), bias = random_vector(O, rng);
  const Vec R = random_vector(N * O, rng);
  Vec out(N * O);
  nn::linear_forward(out.data(), x.data(), w.data(), bias.data(), N, I, O);
  double err = 0;
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < O; ++o) {
      double s = bias[o];
      for (int i = 0; i < I; ++i) s += x[n * I + i] * w[i * O + o];
      err = std::max(err, std::abs(s - out[n * O + o]));
    }
  CHECK(err < 1e-14);

  const Vec dw0 = random_vector(I * O, rng), db0 = random_vector(O, rng);
  Vec dx(N * I, kGarbage), dw = dw0, db = db0;
  nn::linear_backward(dx.data(), dw.data(), db.data(), R.data(), x.data(), w.data(), N, I, O);
  const auto L = [&] {
    Vec y(N * O);
    nn::linear_forward(y.data(), x.data(), w.data(), bias.data(), N, I, O);
    return dot(R, y);
  };
  CHECK(gradient_error(x, dx, L) < kTolerance);
  CHECK(gradient_error(w, minus(dw, dw0), L) < kTolerance);
  CHECK(gradient_error(bias, minus(db, db0), L) < kTolerance);

  // No bias, no dx: the same weight gradient, added once more.
  Vec dw2 = dw;
  nn::linear_backward<backend::Cpu, double>(nullptr, dw2.data(), nullptr, R.data(), x.data(),
                                            w.data(), N, I, O);
  CHECK(max_abs_diff(minus(dw2, dw), minus(dw, dw0)) < 1e-14);
  nn::linear_forward<backend::Cpu, double>(out.data(), x.data(), w.data(), nullptr, N, I, O);
  double s = 0;
  for (int i = 0; i < I; ++i) s += x[i] * w[i * O];
  CHECK(std::abs(out[0] - s) < 1e-14);
}

TEST_CASE("layernorm: normalised rows, affine, backward against finite differences") {
  std::mt19937 rng(3);
  const int N = 5, C = 8;
  Vec x = random_vector(N * C, rng, -2, 3), weight = random_vector(C, rng),
      bias = random_vector(C, rng);
  Vec out(N * C), mean(N), rstd(N);
  const Vec ones(C, 1.0), zeros(C, 0.0);
  nn::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), ones.data(), zeros.data(),
                        N, C);
  for (int n = 0; n < N; ++n) {
    double m = 0, v = 0, mx = 0, vx = 0;
    for (int c = 0; c < C; ++c) {
      m += out[n * C + c] / C;
      mx += x[n * C + c] / C;
    }
    for (int c = 0; c < C; ++c) {
      v += std::pow(out[n * C + c] - m, 2) / C;
      vx += std::pow(x[n * C + c] - mx, 2) / C;
    }
    CHECK(std::abs(m) < 1e-12);
    CHECK(std::abs(v - vx / (vx + 1e-5)) < 1e-12);  // 1 up to eps
    CHECK(std::abs(mean[n] - mx) < 1e-12);
    CHECK(std::abs(rstd[n] - 1 / std::sqrt(vx + 1e-5)) < 1e-12);
  }
  const Vec normalised = out;
  nn::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), weight.data(), bias.data(),
                        N, C);
  for (int i = 0; i < N * C; ++i)
    CHECK(std::abs(out[i] - (normalised[i] * weight[i % C] + bias[i % C])) < 1e-12);

  const Vec R = random_vector(N * C, rng);
  const Vec dw0 = random_vector(C, rng), db0 = random_vector(C, rng);
  Vec dx(N * C, kGarbage), dw = dw0, db = db0;
  nn::layernorm_backward(dx.data(), dw.data(), db.data(), R.data(), x.data(), weight.data(),
                         mean.data(), rstd.data(), N, C);
  const auto L = [&] {
    Vec y(N * C), m(N), r(N);
    nn::layernorm_forward(y.data(), m.data(), r.data(), x.data(), weight.data(), bias.data(), N, C);
    return dot(R, y);
  };
  CHECK(gradient_error(x, dx, L) < kTolerance);
  CHECK(gradient_error(weight, minus(dw, dw0), L) < kTolerance);
  CHECK(gradient_error(bias, minus(db, db0), L) < kTolerance);
}

// Zero-bubble's split (Qi et al. 2023): B writes only the input gradient, W only the weight
// gradients (without reading the weights), and the two give the fused backward's numbers.
TEST_CASE("linear and layernorm: backward split into input (B) and weight (W) equals the fused") {
  std::mt19937 rng(8);
  const int N = 6, I = 5, O = 4;
  const Vec x = random_vector(N * I, rng), w = random_vector(I * O, rng),
            dy = random_vector(N * O, rng), dw0 = random_vector(I * O, rng),
            db0 = random_vector(O, rng);
  Vec dx(N * I), dw = dw0, db = db0, dx_b(N * I), dw_b = dw0, db_b = db0;
  nn::linear_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), N, I, O);
  nn::linear_backward(dx_b.data(), dw_b.data(), db_b.data(), dy.data(), x.data(), w.data(), N, I, O,
                      nn::BackwardPart::input);
  CHECK(dx_b == dx);
  CHECK(dw_b == dw0);  // B leaves the weight gradients alone
  CHECK(db_b == db0);
  Vec untouched(N * I, kGarbage);
  nn::linear_backward(untouched.data(), dw_b.data(), db_b.data(), dy.data(), x.data(),
                      static_cast<const double*>(nullptr), N, I, O, nn::BackwardPart::weight);
  CHECK(dw_b == dw);
  CHECK(db_b == db);
  CHECK(untouched == Vec(N * I, kGarbage));  // W leaves the input gradient alone

  const int C = 8;
  const Vec xl = random_vector(N * C, rng, -2, 3), gain = random_vector(C, rng),
            shift = random_vector(C, rng), dyl = random_vector(N * C, rng);
  Vec y(N * C), mean(N), rstd(N);
  nn::layernorm_forward(y.data(), mean.data(), rstd.data(), xl.data(), gain.data(), shift.data(), N,
                        C);
  Vec dxl(N * C), dg(C, 0.5), dbl(C, -0.5), dxl_b(N * C), dg_b(C, 0.5), dbl_b(C, -0.5);
  nn::layernorm_backward(dxl.data(), dg.data(), dbl.data(), dyl.data(), xl.data(), gain.data(),
                         mean.data(), rstd.data(), N, C);
  nn::layernorm_backward(dxl_b.data(), dg_b.data(), dbl_b.data(), dyl.data(), xl.data(),
                         gain.data(), mean.data(), rstd.data(), N, C, nn::BackwardPart::input);
  CHECK(dxl_b == dxl);
  CHECK(dg_b == Vec(C, 0.5));
  nn::layernorm_backward<backend::Cpu, double>(nullptr, dg_b.data(), dbl_b.data(), dyl.data(),
                                               xl.data(), nullptr, mean.data(), rstd.data(), N, C,
                                               nn::BackwardPart::weight);
  CHECK(dg_b == dg);
  CHECK(dbl_b == dbl);
}

TEST_CASE("gelu: tanh approximation, backward against finite differences, in place") {
  std::mt19937 rng(4);
  const std::size_t n = 40;
  Vec x = random_vector(n, rng, -4, 4);
  Vec out(n);
  nn::gelu_forward(out.data(), x.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    const double v = x[i];
    const double approx =
        0.5 * v * (1 + std::tanh(std::sqrt(2 / std::acos(-1.0)) * (v + 0.044715 * v * v * v)));
    CHECK(std::abs(out[i] - approx) < 1e-14);
    CHECK(std::abs(out[i] - 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))) < 1e-3);  // x Phi(x)
  }
  const Vec R = random_vector(n, rng);
  Vec dx(n, kGarbage);
  nn::gelu_backward(dx.data(), R.data(), x.data(), n);
  const auto L = [&] {
    Vec y(n);
    nn::gelu_forward(y.data(), x.data(), n);
    return dot(R, y);
  };
  CHECK(gradient_error(x, dx, L) < kTolerance);
  Vec in_place = R;
  nn::gelu_backward(in_place.data(), in_place.data(), x.data(), n);
  CHECK(max_abs_diff(in_place, dx) == 0);
}

// Attention over seq tokens, head size D: probabilities and output against loops, backward
// against FD (every element of qkv up to `samples`).
void check_attention(int seq, int D, std::size_t samples) {
  CAPTURE(seq);
  CAPTURE(D);
  std::mt19937 rng(5);
  const int B = 2, H = 2, W = 3 * H * D;
  Vec qkv = random_vector(seq * B * W, rng, -2, 2);
  Vec out(seq * B * H * D), probs(B * H * seq * seq, kGarbage);
  nn::attention_forward(out.data(), probs.data(), qkv.data(), B, seq, H, D);
  double err_p = 0, err_o = 0;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int s = 0; s < seq; ++s) {
        const auto at = [&](int t, int section, int d) {
          return qkv[(t * B + b) * W + section * H * D + h * D + d];
        };
        Vec p(seq, 0.0);
        double sum = 0, psum = 0;
        for (int t = 0; t <= s; ++t) {
          double score = 0;
          for (int d = 0; d < D; ++d) score += at(s, 0, d) * at(t, 1, d);
          sum += (p[t] = std::exp(score / std::sqrt(double(D))));
        }
        for (int t = 0; t < seq; ++t) {
          if (t >= nn::attention_detail::row_columns(s, seq)) break;  // not written, never read
          const double got = probs[((b * H + h) * seq + s) * seq + t];
          if (t > s) CHECK(got == 0);  // causal
          psum += got;
          err_p = std::max(err_p, std::abs(got - p[t] / sum));
        }
        CHECK(std::abs(psum - 1) < 1e-14);
        for (int d = 0; d < D; ++d) {
          double o = 0;
          for (int t = 0; t <= s; ++t) o += p[t] / sum * at(t, 2, d);
          err_o = std::max(err_o, std::abs(o - out[(s * B + b) * H * D + h * D + d]));
        }
      }
  CHECK(err_p < 1e-14);
  CHECK(err_o < 1e-14);

  const Vec R = random_vector(out.size(), rng);
  Vec dqkv(qkv.size(), kGarbage);
  nn::attention_backward(dqkv.data(), R.data(), qkv.data(), probs.data(), B, seq, H, D);
  const auto L = [&] {
    Vec y(out.size()), p(probs.size());
    nn::attention_forward(y.data(), p.data(), qkv.data(), B, seq, H, D);
    return dot(R, y);
  };
  CHECK(gradient_error(qkv, dqkv, L, samples) < kTolerance);
}

// Tiles of 8 query rows (nn::attention_detail::kTile), score chunks of 16 columns (kWidth):
// seq = 5: single rows only; seq = 70: 8 tiles, 6 single rows, rows ending inside a chunk. Head
// sizes: D = 3 scalar; D = 16 one chunk; D = 40 two chunks in registers and 8 scalar columns.
TEST_CASE("attention: causal probabilities, output against loops, backward against FD") {
  check_attention(5, 3, 1000);
  check_attention(70, 3, 3000);
  check_attention(21, 16, 400);
  check_attention(40, 40, 400);
}

// Float runs register tiles of its own (nn/detail/attention_tiles.hpp: 8 rows with AVX-512,
// double 4): the float kernel against the double one, checked above, on the same inputs, to
// float's rounding (sums of up to seq products of magnitude ~1: 1e-5 of the largest value).
TEST_CASE("attention: float against double (their own register tiles)") {
  for (const auto& [seq, D] : {std::pair{128, 32}, std::pair{70, 32}, std::pair{40, 40}}) {
    CAPTURE(seq);
    CAPTURE(D);
    std::mt19937 rng(9);
    const int B = 2, H = 2;
    const Vec qkv = random_vector(seq * B * 3 * H * D, rng, -2, 2);
    const Vec dout = random_vector(seq * B * H * D, rng);
    Vec out(dout.size()), probs(B * H * seq * seq, 0.0), dqkv(qkv.size());
    nn::attention_forward(out.data(), probs.data(), qkv.data(), B, seq, H, D);
    nn::attention_backward(dqkv.data(), dout.data(), qkv.data(), probs.data(), B, seq, H, D);
    const std::vector<float> qkv_f(qkv.begin(), qkv.end()), dout_f(dout.begin(), dout.end());
    std::vector<float> out_f(out.size()), probs_f(probs.size(), 0.f), dqkv_f(qkv.size());
    nn::attention_forward(out_f.data(), probs_f.data(), qkv_f.data(), B, seq, H, D);
    nn::attention_backward(dqkv_f.data(), dout_f.data(), qkv_f.data(), probs_f.data(), B, seq, H,
                           D);
    const auto close = [](const Vec& want, const std::vector<float>& got) {
      return max_abs_diff(want, Vec(got.begin(), got.end())) <
             1e-5 * std::max(1.0, max_abs_diff(want, Vec(want.size(), 0.0)));
    };
    CHECK(close(out, out_f));
    CHECK(close(dqkv, dqkv_f));
  }
}

TEST_CASE("token embedding: rows of this rank's vocabulary range, zeros elsewhere; backward") {
  std::mt19937 rng(6);
  const int N = 7, C = 5, begin = 3, end = 8;
  const std::vector<std::int32_t> tokens{3, 7, 0, 5, 5, 9, 3};  // repeats and foreign tokens
  Vec wte = random_vector((end - begin) * C, rng);
  Vec out(N * C, kGarbage);
  nn::token_embedding_forward(out.data(), tokens.data(), wte.data(), N, C, begin, end);
  for (int i = 0; i < N; ++i)
    for (int c = 0; c < C; ++c) {
      const bool mine = tokens[i] >= begin && tokens[i] < end;
      CHECK(out[i * C + c] == (mine ? wte[(tokens[i] - begin) * C + c] : 0.0));
    }
  const Vec R = random_vector(N * C, rng), dwte0 = random_vector(wte.size(), rng);
  Vec dwte = dwte0;
  nn::token_embedding_backward(dwte.data(), R.data(), tokens.data(), N, C, begin, end);
  const auto L = [&] {
    Vec y(N * C);
    nn::token_embedding_forward(y.data(), tokens.data(), wte.data(), N, C, begin, end);
    return dot(R, y);
  };
  CHECK(gradient_error(wte, minus(dwte, dwte0), L) < kTolerance);
}

TEST_CASE("position embedding: row i gets wpe[t_begin + i / B]; backward sums the B rows") {
  std::mt19937 rng(7);
  const int B = 3, S_local = 4, rows = S_local * B, C = 5, t_begin = 2, positions = 8;
  Vec wpe = random_vector(positions * C, rng);
  const Vec base = random_vector(rows * C, rng);
  Vec out = base;
  nn::position_embedding_forward(out.data(), wpe.data(), rows, B, t_begin, C);
  for (int i = 0; i < rows; ++i)
    for (int c = 0; c < C; ++c)
      CHECK(out[i * C + c] == base[i * C + c] + wpe[(t_begin + i / B) * C + c]);
  const Vec R = random_vector(rows * C, rng), dwpe0 = random_vector(wpe.size(), rng);
  Vec dwpe = dwpe0;
  nn::position_embedding_backward(dwpe.data(), R.data(), rows, B, t_begin, C);
  const auto L = [&] {
    Vec y = base;
    nn::position_embedding_forward(y.data(), wpe.data(), rows, B, t_begin, C);
    return dot(R, y);
  };
  CHECK(gradient_error(wpe, minus(dwpe, dwpe0), L) < kTolerance);  // untouched rows included
}

TEST_CASE("cross-entropy: losses against log-sum-exp, dlogits against finite differences") {
  std::mt19937 rng(8);
  const int N = 6, V = 11;
  const double scale = 1.0 / N;
  Vec logits = random_vector(N * V, rng, -3, 3);
  const std::vector<std::int32_t> targets{0, 10, 4, 4, 7, 2};
  Vec losses(N), probs(N * V);
  nn::cross_entropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V, 0, V);
  for (int i = 0; i < N; ++i) {
    double sum = 0, psum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp(logits[i * V + v]);
    for (int v = 0; v < V; ++v) psum += probs[i * V + v];
    CHECK(std::abs(losses[i] - (std::log(sum) - logits[i * V + targets[i]])) < 1e-13);
    CHECK(std::abs(probs[i * V + 3] - std::exp(logits[i * V + 3]) / sum) < 1e-15);
    CHECK(std::abs(psum - 1) < 1e-14);
  }
  Vec dlogits(N * V, kGarbage);
  nn::cross_entropy_backward(dlogits.data(), probs.data(), targets.data(), scale, N, V, 0);
  const auto L = [&] {
    Vec l(N), p(N * V);
    nn::cross_entropy_forward(l.data(), p.data(), logits.data(), targets.data(), N, V, 0, V);
    double s = 0;
    for (double x : l) s += x * scale;
    return s;
  };
  CHECK(gradient_error(logits, dlogits, L) < kTolerance);
}

TEST_CASE("cross-entropy split over 1, 2, 3 simulated ranks with padding equals the unsplit") {
  std::mt19937 rng(9);
  const int N = 6, V = 11;  // padded to 12 columns: 11 is not a multiple of 2 or 3
  const double scale = 0.25;
  const std::vector<std::int32_t> targets{0, 10, 4, 5, 7, 6};
  const Vec logits = random_vector(N * V, rng, -3, 3);
  Vec losses(N), probs(N * V), dlogits(N * V);
  nn::cross_entropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V, 0, V);
  nn::cross_entropy_backward(dlogits.data(), probs.data(), targets.data(), scale, N, V, 0);

  for (int ranks : {1, 2, 3}) {
    const int V_local = 12 / ranks;
    ThreadAllReduce all_max(ranks), all_sum(ranks);
    std::vector<Vec> rank_losses(ranks, Vec(N)), rank_dlogits(ranks, Vec(N * V_local, kGarbage));
    std::vector<Vec> rank_probs(ranks, Vec(N * V_local, kGarbage));
    const auto rank_main = [&](int r) {
      const int begin = r * V_local;
      Vec block(N * V_local);  // this rank's columns; padding columns hold a large logit
      for (int i = 0; i < N; ++i)
        for (int v = 0; v < V_local; ++v)
          block[i * V_local + v] = begin + v < V ? logits[i * V + begin + v] : 50.0;
      const auto reduce_max = [&](double* buf, int n) {
        all_max.run(buf, n, [](double a, double b) { return std::max(a, b); });
      };
      const auto reduce_sum = [&](double* buf, int n) {
        all_sum.run(buf, n, [](double a, double b) { return a + b; });
      };
      nn::cross_entropy_forward(rank_losses[r].data(), rank_probs[r].data(), block.data(),
                                targets.data(), N, V_local, begin, V, reduce_max, reduce_sum);
      nn::cross_entropy_backward(rank_dlogits[r].data(), rank_probs[r].data(), targets.data(),
                                 scale, N, V_local, begin);
    };
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r) threads.emplace_back(rank_main, r);
    for (auto& t : threads) t.join();

    for (int r = 0; r < ranks; ++r) {
      INFO("ranks=", ranks, " rank=", r);
      CHECK(max_abs_diff(rank_losses[r], losses) < 1e-13);
      double err_p = 0, err_d = 0;
      for (int i = 0; i < N; ++i)
        for (int v = 0; v < V_local; ++v) {
          const int g = r * V_local + v;
          const double p = g < V ? probs[i * V + g] : 0, d = g < V ? dlogits[i * V + g] : 0;
          err_p = std::max(err_p, std::abs(rank_probs[r][i * V_local + v] - p));
          err_d = std::max(err_d, std::abs(rank_dlogits[r][i * V_local + v] - d));
        }
      CHECK(err_p < 1e-15);
      CHECK(err_d < 1e-15);
    }
  }
}

TEST_CASE("float instantiations agree with double") {
  std::mt19937 rng(10);
  const int B = 2, seq = 4, H = 2, D = 4, N = seq * B, C = H * D, W = 3 * C;
  const Vec xd = random_vector(N * C, rng), wd = random_vector(C * W, rng),
            gd = random_vector(N * C, rng);
  const auto run = [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> x(xd.begin(), xd.end()), w(wd.begin(), wd.end()), g(gd.begin(), gd.end());
    std::vector<T> ln(N * C), mean(N), rstd(N), ones(C, 1), zeros(C, 0), qkv(N * W),
        probs(B * H * seq * seq), att(N * C), act(N * C), dqkv(N * W);
    nn::layernorm_forward(ln.data(), mean.data(), rstd.data(), x.data(), ones.data(), zeros.data(),
                          N, C);
    nn::linear_forward(qkv.data(), ln.data(), w.data(), static_cast<const T*>(nullptr), N, C, W);
    nn::attention_forward(att.data(), probs.data(), qkv.data(), B, seq, H, D);
    nn::gelu_forward(act.data(), att.data(), act.size());
    nn::attention_backward(dqkv.data(), g.data(), qkv.data(), probs.data(), B, seq, H, D);
    act.insert(act.end(), dqkv.begin(), dqkv.end());
    return Vec(act.begin(), act.end());
  };
  const Vec d = run(0.0), f = run(0.0f);
  REQUIRE(d.size() == f.size());
  CHECK(max_abs_diff(d, f) < 1e-4);
}
