// tests/cuda/layer_checks.hpp: every layer of nn/ (and optim/'s AdamW, backend/ops.hpp's
// conversions) run on backend B's memory against the same layer on the CPU backend on the same
// inputs, in double, within kRelative.
//
// One check per layer, forward and backward, written once over the backend type: the host-side
// test (test_layers_host.cpp) runs them with backend::Emulated (the CPU behind guarded memory:
// every pointer device memory, every crossing an explicit copy) and the GEMM attention a GPU runs
// on the CPU, the gpu test (test_layers_gpu.cu) with backend::Cuda (the same bodies launched on
// the device, cuBLAS for the GEMMs).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <trident/backend/cpu/gemm.hpp>
#include <trident/backend/device_buffer.hpp>
#include <trident/backend/ops.hpp>
#include <trident/nn/nn.hpp>
#include <trident/optim/adamw.hpp>

namespace trident::test {

// Double on both sides: only the order of the sums may differ (SIMD sums on the CPU).
inline constexpr double kRelative = 1e-12;
using Vec = std::vector<double>;

inline Vec random_values(std::size_t n, unsigned seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Vec v(n);
  for (double& x : v) x = u(rng);
  return v;
}

// max |a - b| / max |b|
inline double relative_error(const Vec& a, const Vec& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return scale == 0 ? diff : diff / scale;
}

// A host vector's copy in B's memory, and back.
template <class B, class T>
backend::DeviceBuffer<T, B> on_device(const std::vector<T>& host) {
  backend::DeviceBuffer<T, B> d(MemoryKind::activations, host.size(), Fill::none);
  B::to_device(d.data(), host.data(), host.size() * sizeof(T));
  return d;
}
template <class B, class T>
std::vector<T> on_host(const backend::DeviceBuffer<T, B>& d) {
  std::vector<T> host(d.size());
  B::to_host(host.data(), d.data(), d.bytes());
  B::synchronize();
  return host;
}

#define TRIDENT_CHECK_CLOSE(device, reference)                  \
  CHECK_MESSAGE(relative_error(device, reference) <= kRelative, \
                #device " vs " #reference ": " << relative_error(device, reference))

template <class B>
void check_gemm() {
  const int M = 5, N = 4, K = 3, lda = 9, ldb = 7, ldc = 6;  // views inside wider buffers
  const Vec A = random_values(std::max(M, K) * lda, 1), Bm = random_values(std::max(N, K) * ldb, 2);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (double beta : {0.0, 1.0, 0.5}) {
        Vec C = random_values(M * ldc, 3);
        auto a = on_device<B>(A), b = on_device<B>(Bm), c = on_device<B>(C);
        B::gemm(ta, tb, M, N, K, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
        backend::gemm<double>(backend::view(C.data(), M, N, ldc),
                              backend::cview(A.data(), ta ? K : M, ta ? M : K, lda),
                              backend::cview(Bm.data(), tb ? N : K, tb ? K : N, ldb), ta, tb, beta);
        INFO("trans_a " << ta << " trans_b " << tb << " beta " << beta);
        TRIDENT_CHECK_CLOSE(on_host(c), C);
      }
}

template <class B>
void check_embedding() {
  const int N = 12, Bt = 3, C = 8, vocab = 10, begin = 4, end = 9, positions = 6, t_begin = 1;
  std::vector<std::int32_t> tokens(N);
  for (int i = 0; i < N; ++i) tokens[i] = (i * 7) % vocab;  // repeats, some outside [4, 9)
  const Vec wte = random_values((end - begin) * C, 4), wpe = random_values(positions * C, 5);
  const Vec dout = random_values(N * C, 6);
  Vec out(N * C), dwte = random_values((end - begin) * C, 7),
                  dwpe = random_values(positions * C, 8);
  auto t = on_device<B>(tokens);
  auto out_d = on_device<B>(Vec(N * C, 1e6)), wte_d = on_device<B>(wte), wpe_d = on_device<B>(wpe);
  auto dout_d = on_device<B>(dout), dwte_d = on_device<B>(dwte), dwpe_d = on_device<B>(dwpe);
  nn::token_embedding_forward(out.data(), tokens.data(), wte.data(), N, C, begin, end);
  nn::position_embedding_forward(out.data(), wpe.data(), N, Bt, t_begin, C);
  nn::token_embedding_backward(dwte.data(), dout.data(), tokens.data(), N, C, begin, end);
  nn::position_embedding_backward(dwpe.data(), dout.data(), N, Bt, t_begin, C);
  nn::token_embedding_forward<B>(out_d.data(), t.data(), wte_d.data(), N, C, begin, end);
  nn::position_embedding_forward<B>(out_d.data(), wpe_d.data(), N, Bt, t_begin, C);
  nn::token_embedding_backward<B>(dwte_d.data(), dout_d.data(), t.data(), N, C, begin, end);
  nn::position_embedding_backward<B>(dwpe_d.data(), dout_d.data(), N, Bt, t_begin, C);
  TRIDENT_CHECK_CLOSE(on_host(out_d), out);
  TRIDENT_CHECK_CLOSE(on_host(dwte_d), dwte);
  TRIDENT_CHECK_CLOSE(on_host(dwpe_d), dwpe);
}

template <class B>
void check_norms() {
  const int N = 7, C = 24;
  const Vec x = random_values(N * C, 9, -2, 3), w = random_values(C, 10),
            bias = random_values(C, 11);
  const Vec dout = random_values(N * C, 12);
  auto x_d = on_device<B>(x), w_d = on_device<B>(w), b_d = on_device<B>(bias),
       dout_d = on_device<B>(dout);
  {  // LayerNorm
    Vec out(N * C), mean(N), rstd(N), dx(N * C), dw = random_values(C, 13),
                                                 db = random_values(C, 14);
    auto out_d = on_device<B>(out), mean_d = on_device<B>(mean), rstd_d = on_device<B>(rstd);
    auto dx_d = on_device<B>(Vec(N * C, 1e6)), dw_d = on_device<B>(dw), db_d = on_device<B>(db);
    nn::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), bias.data(), N,
                          C);
    nn::layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(),
                           mean.data(), rstd.data(), N, C);
    nn::layernorm_forward<B>(out_d.data(), mean_d.data(), rstd_d.data(), x_d.data(), w_d.data(),
                             b_d.data(), N, C);
    nn::layernorm_backward<B>(dx_d.data(), dw_d.data(), db_d.data(), dout_d.data(), x_d.data(),
                              w_d.data(), mean_d.data(), rstd_d.data(), N, C);
    TRIDENT_CHECK_CLOSE(on_host(out_d), out);
    TRIDENT_CHECK_CLOSE(on_host(mean_d), mean);
    TRIDENT_CHECK_CLOSE(on_host(rstd_d), rstd);
    TRIDENT_CHECK_CLOSE(on_host(dx_d), dx);
    TRIDENT_CHECK_CLOSE(on_host(dw_d), dw);
    TRIDENT_CHECK_CLOSE(on_host(db_d), db);
  }
  {  // RMSNorm
    const double eps = 1e-6;
    Vec out(N * C), rstd(N), dx(N * C), dw = random_values(C, 15);
    auto out_d = on_device<B>(out), rstd_d = on_device<B>(rstd);
    auto dx_d = on_device<B>(Vec(N * C, 1e6)), dw_d = on_device<B>(dw);
    nn::rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, eps);
    nn::rmsnorm_backward(dx.data(), dw.data(), dout.data(), x.data(), w.data(), rstd.data(), N, C);
    nn::rmsnorm_forward<B>(out_d.data(), rstd_d.data(), x_d.data(), w_d.data(), N, C, eps);
    nn::rmsnorm_backward<B>(dx_d.data(), dw_d.data(), dout_d.data(), x_d.data(), w_d.data(),
                            rstd_d.data(), N, C);
    TRIDENT_CHECK_CLOSE(on_host(out_d), out);
    TRIDENT_CHECK_CLOSE(on_host(rstd_d), rstd);
    TRIDENT_CHECK_CLOSE(on_host(dx_d), dx);
    TRIDENT_CHECK_CLOSE(on_host(dw_d), dw);
  }
}

template <class B>
void check_activations() {
  {  // GELU
    const int n = 1000;
    const Vec x = random_values(n, 16, -4, 4), dout = random_values(n, 17);
    Vec out(n), dx(n);
    auto x_d = on_device<B>(x), dout_d = on_device<B>(dout), out_d = on_device<B>(out),
         dx_d = on_device<B>(out);
    nn::gelu_forward(out.data(), x.data(), n);
    nn::gelu_backward(dx.data(), dout.data(), x.data(), n);
    nn::gelu_forward<B>(out_d.data(), x_d.data(), n);
    nn::gelu_backward<B>(dx_d.data(), dout_d.data(), x_d.data(), n);
    TRIDENT_CHECK_CLOSE(on_host(out_d), out);
    TRIDENT_CHECK_CLOSE(on_host(dx_d), dx);
  }
  {  // SwiGLU on the two halves of one (N, 2F) matrix [a | b]
    const int N = 5, F = 9, ld = 2 * F;
    const Vec ab = random_values(N * ld, 18, -3, 3), dout = random_values(N * F, 19);
    Vec out(N * F), dab(N * ld);
    auto ab_d = on_device<B>(ab), dout_d = on_device<B>(dout), out_d = on_device<B>(out),
         dab_d = on_device<B>(dab);
    nn::swiglu_forward(out.data(), ab.data(), ab.data() + F, N, F, ld);
    nn::swiglu_backward(dab.data(), dab.data() + F, dout.data(), ab.data(), ab.data() + F, N, F,
                        ld);
    nn::swiglu_forward<B>(out_d.data(), ab_d.data(), ab_d.data() + F, N, F, ld);
    nn::swiglu_backward<B>(dab_d.data(), dab_d.data() + F, dout_d.data(), ab_d.data(),
                           ab_d.data() + F, N, F, ld);
    TRIDENT_CHECK_CLOSE(on_host(out_d), out);
    TRIDENT_CHECK_CLOSE(on_host(dab_d), dab);
  }
}

// Multi-head (KV = H) and grouped-query (KV < H) attention, S not a multiple of the CPU
// layer's block of rows.
template <class B>
void check_attention(int Bt, int S, int H, int KV, int D) {
  const int width = (H + 2 * KV) * D, rows = S * Bt;
  const Vec qkv = random_values(rows * width, 20), dout = random_values(rows * H * D, 21);
  Vec out(rows * H * D), probs(std::size_t(Bt) * H * S * S), dqkv(rows * width, 1e6);
  auto qkv_d = on_device<B>(qkv), dout_d = on_device<B>(dout), out_d = on_device<B>(out),
       probs_d = on_device<B>(probs), dqkv_d = on_device<B>(dqkv);
  nn::attention_forward(out.data(), probs.data(), qkv.data(), Bt, S, H, KV, D);
  nn::attention_backward(dqkv.data(), dout.data(), qkv.data(), probs.data(), Bt, S, H, KV, D);
  nn::attention_forward<B>(out_d.data(), probs_d.data(), qkv_d.data(), Bt, S, H, KV, D);
  nn::attention_backward<B>(dqkv_d.data(), dout_d.data(), qkv_d.data(), probs_d.data(), Bt, S, H,
                            KV, D);
  INFO("B " << Bt << " S " << S << " H " << H << " KV " << KV << " D " << D);
  TRIDENT_CHECK_CLOSE(on_host(out_d), out);
  TRIDENT_CHECK_CLOSE(on_host(probs_d), probs);
  TRIDENT_CHECK_CLOSE(on_host(dqkv_d), dqkv);
}

// The GEMM attention a GPU runs (nn/detail/attention_gemm.hpp) against the CPU's fused kernel,
// both on the CPU: the same probabilities, outputs and gradients.
inline void check_gemm_attention(int Bt, int S, int H, int KV, int D) {
  const int width = (H + 2 * KV) * D, rows = S * Bt;
  const Vec qkv = random_values(rows * width, 20), dout = random_values(rows * H * D, 21);
  Vec out(rows * H * D), probs(std::size_t(Bt) * H * S * S), dqkv(rows * width, 1e6);
  Vec out_g = out, probs_g = probs, dqkv_g = dqkv;
  nn::attention_detail::fused_forward(out.data(), probs.data(), qkv.data(), Bt, S, H, KV, D);
  nn::attention_detail::fused_backward(dqkv.data(), dout.data(), qkv.data(), probs.data(), Bt, S, H,
                                       KV, D);
  nn::attention_detail::gemm_forward<backend::Cpu>(out_g.data(), probs_g.data(), qkv.data(), Bt, S,
                                                   H, KV, D);
  nn::attention_detail::gemm_backward<backend::Cpu>(dqkv_g.data(), dout.data(), qkv.data(),
                                                    probs_g.data(), Bt, S, H, KV, D);
  INFO("B " << Bt << " S " << S << " H " << H << " KV " << KV << " D " << D);
  TRIDENT_CHECK_CLOSE(out_g, out);
  TRIDENT_CHECK_CLOSE(probs_g, probs);
  TRIDENT_CHECK_CLOSE(dqkv_g, dqkv);
}

// Unsplit, with padding columns (V_local > vocab_size), in place (probs = logits).
template <class B>
void check_cross_entropy() {
  const int N = 6, vocab = 13, V_local = 16;
  const Vec logits = random_values(N * V_local, 22, -5, 5);
  std::vector<std::int32_t> targets(N);
  for (int i = 0; i < N; ++i) targets[i] = (i * 5) % vocab;
  Vec losses(N), probs = logits, dlogits(N * V_local);
  auto t_d = on_device<B>(targets);
  auto losses_d = on_device<B>(losses), probs_d = on_device<B>(logits),
       dlogits_d = on_device<B>(dlogits);
  const double scale = 1.0 / N;
  nn::cross_entropy_forward(losses.data(), probs.data(), probs.data(), targets.data(), N, V_local,
                            0, vocab);
  nn::cross_entropy_backward(dlogits.data(), probs.data(), targets.data(), scale, N, V_local, 0);
  nn::cross_entropy_forward<B>(losses_d.data(), probs_d.data(), probs_d.data(), t_d.data(), N,
                               V_local, 0, vocab);
  nn::cross_entropy_backward<B>(dlogits_d.data(), probs_d.data(), t_d.data(), scale, N, V_local, 0);
  TRIDENT_CHECK_CLOSE(on_host(losses_d), losses);
  TRIDENT_CHECK_CLOSE(on_host(probs_d), probs);
  TRIDENT_CHECK_CLOSE(on_host(dlogits_d), dlogits);
}

// Three steps with clipping and decay against AdamW::update on the CPU.
template <class B>
void check_adamw() {
  const int n = 3000;
  AdamW opt;
  Vec param = random_values(n, 23), m(n), v(n);
  auto p_d = on_device<B>(param), m_d = on_device<B>(m), v_d = on_device<B>(v);
  for (int t = 1; t <= 3; ++t) {
    const Vec grad = random_values(n, 24 + t);
    auto g_d = on_device<B>(grad);
    const double lr = opt.lr_at(t - 1), clip = 0.7;
    opt.update(param.data(), grad.data(), m.data(), v.data(), n, t, lr, true, clip);
    opt.template update<B>(p_d.data(), g_d.data(), m_d.data(), v_d.data(), n, t, lr, true, clip);
  }
  TRIDENT_CHECK_CLOSE(on_host(p_d), param);
  TRIDENT_CHECK_CLOSE(on_host(m_d), m);
  TRIDENT_CHECK_CLOSE(on_host(v_d), v);
}

// float -> bf16 bit for bit as core/bf16.hpp's rounding (ties to even, NaN, infinities,
// overflow to infinity), and back exactly.
template <class B>
void check_bf16_casts() {
  std::vector<float> x;
  for (double v : random_values(500, 30, -1e3, 1e3)) x.push_back(float(v));
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, 1.0f, 1.00390625f, 1.01171875f, 3.4e38f, -3.4e38f, 1e-40f, inf, -inf,
                  std::numeric_limits<float>::quiet_NaN()})
    x.push_back(v);  // 1 + 2^-8 and 1 + 3 * 2^-8: ties, to even down and up
  const int n = int(x.size());
  std::vector<std::uint16_t> expected(n);
  std::vector<float> back(n);
  for (int i = 0; i < n; ++i) {
    expected[i] = bf16(x[i]).bits;
    back[i] = static_cast<float>(bf16(x[i]));
  }
  auto x_d = on_device<B>(x);
  backend::DeviceBuffer<bf16, B> y_d(MemoryKind::activations, n);
  backend::DeviceBuffer<float, B> back_d(MemoryKind::activations, n);
  backend::convert<B>(y_d.data(), x_d.data(), n);
  backend::convert<B>(back_d.data(), y_d.data(), n);
  const std::vector<bf16> y = on_host(y_d);
  const std::vector<float> back_got = on_host(back_d);
  for (int i = 0; i < n; ++i) {
    INFO("x = " << x[i]);
    CHECK(y[i].bits == expected[i]);
    CHECK(std::memcmp(&back_got[i], &back[i], sizeof(float)) == 0);
  }
}

}  // namespace trident::test
