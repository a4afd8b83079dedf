// tests/nn_moe_testing.hpp: the mixture-of-experts layer of tests/test_nn_moe.cpp on the host:
// its shapes and parameters, and its forward straight from the formulas, one token at a time (a
// softmax over the experts, the top k by a stable sort, Mixtral's renormalisation for k > 1,
// each expert's SwiGLU MLP by loops, Switch's load-balancing loss per sequence), written apart
// from nn/'s kernels so that the tests compare two independent spellings.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include "nn_testing.hpp"

namespace trident::test::moe {

using Vec = std::vector<double>;
using I32 = std::vector<std::int32_t>;

struct Shape {
  int seq = 5, batch = 3, E = 4, k = 2, C = 8, Fl = 6;
  int N() const { return seq * batch; }
};
// The layer's inputs (double; cast for float runs). dWr0, dw10, dw20: where gradients start.
struct Params {
  Vec x, Wr, w1, w2, R, dWr0, dw10, dw20;
  double alpha = 0.1, weight = 0.7;
};
inline Params draw_params(const Shape& s, std::mt19937& rng) {
  const int N = s.N(), C = s.C, E = s.E, F2 = 2 * s.Fl;
  Params p;
  p.x = random_vector(N * C, rng);
  p.Wr = random_vector(C * E, rng);
  p.w1 = random_vector(E * C * F2, rng, -0.5, 0.5);
  p.w2 = random_vector(E * s.Fl * C, rng, -0.5, 0.5);
  p.R = random_vector(N * C, rng);
  p.dWr0 = random_vector(C * E, rng);
  p.dw10 = random_vector(p.w1.size(), rng);
  p.dw20 = random_vector(p.w2.size(), rng);
  return p;
}

// The forward straight from the formulas, one token at a time (no kernels).
struct Reference {
  Vec probs, gates, out, aux;
  I32 choice;
};
// Expert e's SwiGLU MLP of one row x: (C) -> y: (C) added with weight g to out.
inline void reference_expert(double* out, const double* x, const Params& p, const Shape& s, int e,
                             double g) {
  const int C = s.C, Fl = s.Fl;
  const double* w1 = p.w1.data() + e * C * 2 * Fl;
  const double* w2 = p.w2.data() + e * Fl * C;
  for (int f = 0; f < Fl; ++f) {
    double a = 0, b = 0;
    for (int c = 0; c < C; ++c) {
      a += x[c] * w1[c * 2 * Fl + f];
      b += x[c] * w1[c * 2 * Fl + Fl + f];
    }
    const double act = a / (1 + std::exp(-a)) * b;
    for (int c = 0; c < C; ++c) out[c] += g * act * w2[f * C + c];
  }
}
inline Reference reference_forward(const Shape& s, const Params& p) {
  const int N = s.N(), E = s.E, k = s.k, C = s.C;
  Reference r{Vec(N * E), Vec(N * k), Vec(N * C, 0.0), Vec(s.batch, 0.0), I32(N * k)};
  std::vector<Vec> picks(s.batch, Vec(E, 0.0)), mass(s.batch, Vec(E, 0.0));
  for (int t = 0; t < N; ++t) {
    Vec z(E, 0.0);
    for (int e = 0; e < E; ++e)
      for (int c = 0; c < C; ++c) z[e] += p.x[t * C + c] * p.Wr[c * E + e];
    const double top = *std::max_element(z.begin(), z.end());
    double sum = 0;
    for (int e = 0; e < E; ++e) sum += std::exp(z[e] - top);
    std::vector<int> order(E);
    std::iota(order.begin(), order.end(), 0);
    for (int e = 0; e < E; ++e) r.probs[t * E + e] = std::exp(z[e] - top) / sum;
    const double* pt = &r.probs[t * E];
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return pt[a] > pt[b]; });
    double chosen = 0;
    for (int j = 0; j < k; ++j) chosen += pt[order[j]];
    for (int j = 0; j < k; ++j) {
      r.choice[t * k + j] = order[j];
      r.gates[t * k + j] = k > 1 ? pt[order[j]] / chosen : pt[order[j]];
      reference_expert(&r.out[t * C], &p.x[t * C], p, s, order[j], r.gates[t * k + j]);
      picks[t % s.batch][order[j]] += 1;
    }
    for (int e = 0; e < E; ++e) mass[t % s.batch][e] += pt[e];
  }
  for (int b = 0; b < s.batch; ++b)
    for (int e = 0; e < E; ++e)
      r.aux[b] += p.alpha * E * picks[b][e] / (s.seq * k) * mass[b][e] / s.seq;
  return r;
}
// The smallest gap, over tokens, between the k-th and (k+1)-th largest probability.
inline double top_k_margin(const Shape& s, const Reference& r) {
  double margin = 1;
  for (int t = 0; t < s.N(); ++t) {
    Vec pt(r.probs.begin() + t * s.E, r.probs.begin() + (t + 1) * s.E);
    std::sort(pt.rbegin(), pt.rend());
    margin = std::min(margin, pt[s.k - 1] - pt[s.k]);
  }
  return margin;
}
// Parameters whose top-k has no near-tie (margin above 0.02, thousands of times the probability
// change of a finite-difference step), drawn again until they have none.
inline Params clear_params(const Shape& s, std::mt19937& rng) {
  for (int tries = 0; tries < 1000; ++tries) {
    Params p = draw_params(s, rng);
    if (top_k_margin(s, reference_forward(s, p)) > 0.02) return p;
  }
  FAIL("no parameters without near-ties in 1000 draws");
  return {};
}
}  // namespace trident::test::moe
