// nn/ kernels of a mixture-of-experts MLP (moe_router.hpp, moe_dispatch.hpp, experts.hpp),
// composed into the whole layer with nn::linear_forward as the router: the gradients of
// L = sum(out * R) + weight * sum_b aux_b against central finite differences (double), the
// forward against a loop per token straight from the formulas, ties and the dropless routing,
// zero-bubble's B + W against the fused backward, and bit-identical results across thread
// counts and on the emulated device. Overwritten outputs start as garbage on every backend.
#include <trident/backend/device_buffer.hpp>
#include <trident/backend/emulated/emulated.hpp>
#include <trident/nn/experts.hpp>
#include <trident/nn/linear.hpp>
#include <trident/nn/moe_dispatch.hpp>
#include <trident/nn/moe_router.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <type_traits>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "mpi_test.hpp"
#include "nn_moe_testing.hpp"
#include "nn_testing.hpp"

using namespace trident;
using namespace trident::test;
using namespace trident::test::moe;

namespace {
constexpr double kMoeGarbage = 1e6;  // what overwritten outputs hold before a kernel

// What a run of the layer leaves, downloaded.
template <class T>
struct Result {
  std::vector<T> probs, gates, out, aux, dx, dWr, dw1, dw2;
  I32 choice, counts, position, token;
};

template <class Bk, class T>
using Buf = backend::DeviceBuffer<T, Bk>;
template <class Bk, class T, class S>
Buf<Bk, T> up(const std::vector<S>& h) {
  const std::vector<T> cast(h.begin(), h.end());
  Buf<Bk, T> d(MemoryKind::buffers, h.size(), Fill::none);
  backend::copy_from_host<Bk>(d.data(), cast.data(), cast.size());
  return d;
}
template <class Bk, class T>
Buf<Bk, T> garbage(std::size_t n) {
  return up<Bk, T>(std::vector<T>(n, T(std::is_integral_v<T> ? -7 : kMoeGarbage)));
}
template <class Bk, class T>
std::vector<T> down(const Buf<Bk, T>& d) {
  return backend::host_copy<Bk>(d.data(), d.size());
}

// The layer's buffers on Bk and its forward: router, route, permute, experts, combine, loss.
template <class Bk, class T>
struct Moe {
  Shape s;
  T alpha;
  Buf<Bk, T> x, Wr, w1, w2, logits, probs, gates, aux, fractions, xs, gate_up, act, ys, out;
  Buf<Bk, std::int32_t> choice, position, token, counts;
  std::vector<int> host_counts;

  Moe(const Shape& shape, const Params& p)
      : s(shape),
        alpha(T(p.alpha)),
        x(up<Bk, T>(p.x)),
        Wr(up<Bk, T>(p.Wr)),
        w1(up<Bk, T>(p.w1)),
        w2(up<Bk, T>(p.w2)) {
    const int N = s.N(), Nk = N * s.k, E = s.E;
    for (auto* b : {&logits, &probs}) *b = garbage<Bk, T>(N * E);
    gates = garbage<Bk, T>(Nk);
    aux = garbage<Bk, T>(s.batch);
    fractions = garbage<Bk, T>(s.batch * E);
    xs = garbage<Bk, T>(Nk * s.C);
    ys = garbage<Bk, T>(Nk * s.C);
    gate_up = garbage<Bk, T>(Nk * 2 * s.Fl);
    act = garbage<Bk, T>(Nk * s.Fl);
    out = garbage<Bk, T>(N * s.C);
    for (auto* b : {&choice, &position, &token}) *b = garbage<Bk, std::int32_t>(Nk);
    counts = garbage<Bk, std::int32_t>(E);
  }
  void forward() {
    const int N = s.N(), E = s.E, k = s.k, C = s.C;
    nn::linear_forward<Bk>(logits.data(), x.data(), Wr.data(), static_cast<const T*>(nullptr), N, C,
                           E);
    nn::router_forward<Bk>(probs.data(), choice.data(), gates.data(), logits.data(), N, E, k);
    nn::moe_route<Bk>(counts.data(), position.data(), token.data(), choice.data(), N, E, k);
    std::vector<std::int32_t> c(E);
    backend::download<Bk>(c.data(), counts.data(), c.size());  // the one crossing
    host_counts.assign(c.begin(), c.end());
    nn::moe_permute<Bk>(xs.data(), x.data(), token.data(), N * k, C);
    nn::experts_forward<Bk>(ys.data(), gate_up.data(), act.data(), xs.data(), w1.data(), w2.data(),
                            host_counts.data(), E, C, s.Fl);
    nn::moe_combine<Bk>(out.data(), ys.data(), gates.data(), position.data(), N, k, C);
    nn::load_balancing_forward<Bk>(aux.data(), fractions.data(), probs.data(), choice.data(), s.seq,
                                   s.batch, E, k, alpha);
  }
  // dout = R; split: the experts' backward as zero-bubble's B then W, else fused.
  void backward(Result<T>& r, const Params& p, bool split) {
    const int N = s.N(), E = s.E, k = s.k, C = s.C, Fl = s.Fl, Nk = N * k;
    Buf<Bk, T> dout = up<Bk, T>(p.R), dWr = up<Bk, T>(p.dWr0), dw1 = up<Bk, T>(p.dw10),
               dw2 = up<Bk, T>(p.dw20), dys = garbage<Bk, T>(Nk * C), dgates = garbage<Bk, T>(Nk),
               dxs = garbage<Bk, T>(Nk * C), d_gate_up = garbage<Bk, T>(Nk * 2 * Fl),
               dprobs = garbage<Bk, T>(N * E), dlogits = garbage<Bk, T>(N * E),
               dx = garbage<Bk, T>(N * C);
    nn::moe_combine_backward<Bk>(dys.data(), dgates.data(), dout.data(), ys.data(), gates.data(),
                                 position.data(), N, k, C);
    const auto experts = [&](T* in, T* g1, T* g2, const T* gu, const T* v1, const T* v2,
                             nn::BackwardPart part) {
      nn::experts_backward<Bk, T>(in, g1, g2, d_gate_up.data(), dys.data(), xs.data(), gu,
                                  act.data(), v1, v2, host_counts.data(), E, C, Fl, part);
    };
    if (split) {  // B leaves dw1, dw2 alone (null); W reads neither w1, w2 nor gate_up (null)
      experts(dxs.data(), nullptr, nullptr, gate_up.data(), w1.data(), w2.data(),
              nn::BackwardPart::input);
      experts(nullptr, dw1.data(), dw2.data(), nullptr, nullptr, nullptr, nn::BackwardPart::weight);
    } else {
      experts(dxs.data(), dw1.data(), dw2.data(), gate_up.data(), w1.data(), w2.data(),
              nn::BackwardPart::both);
    }
    nn::router_gates_backward<Bk>(dprobs.data(), dgates.data(), probs.data(), choice.data(),
                                  gates.data(), N, E, k);
    nn::load_balancing_backward<Bk>(dprobs.data(), fractions.data(), s.seq, s.batch, E, alpha,
                                    T(p.weight));
    nn::router_softmax_backward<Bk>(dlogits.data(), dprobs.data(), probs.data(), N, E);
    nn::linear_backward<Bk>(dx.data(), dWr.data(), static_cast<T*>(nullptr), dlogits.data(),
                            x.data(), Wr.data(), N, C, E);
    nn::moe_unpermute<Bk>(dx.data(), dxs.data(), position.data(), N, k, C, true);
    r.dx = down(dx);
    r.dWr = down(dWr);
    r.dw1 = down(dw1);
    r.dw2 = down(dw2);
  }
  Result<T> results() const {
    Result<T> r;
    r.probs = down(probs);
    r.gates = down(gates);
    r.out = down(out);
    r.aux = down(aux);
    r.choice = down(choice);
    r.counts = down(counts);
    r.position = down(position);
    r.token = down(token);
    return r;
  }
};

// The layer on Bk in T: the forward, then (backward) the gradients.
template <class Bk, class T>
Result<T> run_layer(const Shape& s, const Params& p, bool backward = true, bool split = false) {
  Moe<Bk, T> m(s, p);
  m.forward();
  Result<T> r = m.results();
  if (backward) m.backward(r, p, split);
  return r;
}
double loss_of(const Result<double>& r, const Params& p) {
  return dot(r.out, p.R) + p.weight * std::accumulate(r.aux.begin(), r.aux.end(), 0.0);
}

template <class T>
void check_identical(const Result<T>& a, const Result<T>& b, const std::string& what) {
  CHECK_MESSAGE(a.probs == b.probs, what, ": probs");
  CHECK_MESSAGE(a.choice == b.choice, what, ": choice");
  CHECK_MESSAGE(a.gates == b.gates, what, ": gates");
  CHECK_MESSAGE(a.counts == b.counts, what, ": counts");
  CHECK_MESSAGE(a.position == b.position, what, ": position");
  CHECK_MESSAGE(a.token == b.token, what, ": token");
  CHECK_MESSAGE(a.out == b.out, what, ": out");
  CHECK_MESSAGE(a.aux == b.aux, what, ": aux");
  CHECK_MESSAGE(a.dx == b.dx, what, ": dx");
  CHECK_MESSAGE(a.dWr == b.dWr, what, ": dWr");
  CHECK_MESSAGE(a.dw1 == b.dw1, what, ": dw1");
  CHECK_MESSAGE(a.dw2 == b.dw2, what, ": dw2");
}

}  // namespace

TEST_CASE("moe: the layer's gradients (x, Wr, w1, w2) against central finite differences") {
  std::mt19937 rng(31);
  for (int k : {1, 2})
    for (double R_scale : {1.0, 0.0}) {  // R = 0: the load-balancing loss alone
      Shape s;
      s.k = k;
      Params p = clear_params(s, rng);
      for (double& r : p.R) r *= R_scale;
      const Result<double> g = run_layer<backend::Cpu, double>(s, p);
      const auto L = [&] { return loss_of(run_layer<backend::Cpu, double>(s, p, false), p); };
      INFO("k = ", k, ", R scaled by ", R_scale);
      CHECK(gradient_error(p.x, g.dx, L, p.x.size()) < 1e-7);
      CHECK(gradient_error(p.Wr, minus(g.dWr, p.dWr0), L, p.Wr.size()) < 1e-7);
      CHECK(gradient_error(p.w1, minus(g.dw1, p.dw10), L, p.w1.size()) < 1e-7);
      CHECK(gradient_error(p.w2, minus(g.dw2, p.dw20), L, p.w2.size()) < 1e-7);
    }
}

TEST_CASE("moe: the forward (probs, choice, gates, out, aux) against a loop per token") {
  std::mt19937 rng(32);
  for (int k : {1, 2}) {
    Shape s;
    s.k = k;
    const Params p = clear_params(s, rng);
    const Reference want = reference_forward(s, p);
    const Result<double> got = run_layer<backend::Cpu, double>(s, p, false);
    INFO("k = ", k);
    CHECK(max_abs_diff(got.probs, want.probs) < 1e-12);
    CHECK(got.choice == want.choice);
    CHECK(max_abs_diff(got.gates, want.gates) < 1e-12);
    CHECK(max_abs_diff(got.out, want.out) < 1e-12);
    CHECK(max_abs_diff(got.aux, want.aux) < 1e-12);
  }
}

TEST_CASE("moe: ties go to the lower expert; dropless when every token picks the same experts") {
  const int E = 4;  // rows: all equal, two equal seconds, an equal pair below a clear first
  const Vec logits = {0, 0, 0, 0, 1, 3, 3, 0, 2, 1, 1, 1};
  for (int k : {1, 2}) {
    Vec probs(12), gates(3 * k);
    I32 choice(3 * k);
    nn::router_forward(probs.data(), choice.data(), gates.data(), logits.data(), 3, E, k);
    CHECK(choice == (k == 1 ? I32{0, 1, 0} : I32{0, 1, 1, 2, 0, 1}));
    if (k == 2) CHECK(gates[0] == gates[1]);  // 1/2 each after Mixtral's renormalisation
  }
  std::mt19937 rng(33);
  for (int k : {1, 2}) {
    Shape s;
    s.k = k;
    Params p = draw_params(s, rng);  // feature 0 large on every token, expert 2 then 1 its keys
    for (int t = 0; t < s.N(); ++t) p.x[t * s.C] = 3;
    for (double& w : p.Wr) w *= 0.05;
    p.Wr[2] = 2;
    p.Wr[1] = 1.2;
    const Result<double> got = run_layer<backend::Cpu, double>(s, p, false);
    const int N = s.N();
    INFO("k = ", k);
    CHECK(got.counts == (k == 1 ? I32{0, 0, N, 0} : I32{0, N, N, 0}));
    CHECK(std::accumulate(got.counts.begin(), got.counts.end(), 0) == N * k);
    I32 sorted = got.position;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < N * k; ++i) CHECK(sorted[i] == i);         // a permutation of the slots
    for (int i = 0; i < N * k; ++i) CHECK(got.token[i] == i % N);  // by expert, then token
    CHECK(max_abs_diff(got.out, reference_forward(s, p).out) < 1e-12);
  }
}

TEST_CASE("moe: unpermute overwrites or accumulates the sum over a token's slots") {
  const int N = 3, k = 2, C = 2;
  const I32 position = {5, 0, 1, 4, 2, 3};
  Vec dxs(N * k * C);
  std::iota(dxs.begin(), dxs.end(), 1.0);
  Vec dx(N * C, kMoeGarbage);
  nn::moe_unpermute(dx.data(), dxs.data(), position.data(), N, k, C, false);
  CHECK(dx == Vec{12, 14, 12, 14, 12, 14});  // rows 5+0, 1+4, 2+3 of dxs
  nn::moe_unpermute(dx.data(), dxs.data(), position.data(), N, k, C, true);
  CHECK(dx == Vec{24, 28, 24, 28, 24, 28});
}

TEST_CASE("moe: the experts' backward as B then W equals the fused backward bit for bit") {
  std::mt19937 rng(34);
  for (int k : {1, 2}) {
    Shape s;
    s.k = k;
    const Params p = draw_params(s, rng);
    check_identical(run_layer<backend::Cpu, double>(s, p, true, true),
                    run_layer<backend::Cpu, double>(s, p, true, false),
                    "B + W against fused, k = " + std::to_string(k));
  }
}

TEST_CASE("moe: bit-identical over 1 and 2 threads, and on the emulated device (double, float)") {
  std::mt19937 rng(35);
  Shape s;
  const Params p = draw_params(s, rng);
#ifdef _OPENMP
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const Result<double> one = run_layer<backend::Cpu, double>(s, p);
  omp_set_num_threads(2);
  check_identical(one, run_layer<backend::Cpu, double>(s, p), "1 thread against 2");
  omp_set_num_threads(threads);
#endif
  check_identical(run_layer<backend::Cpu, double>(s, p), run_layer<backend::Emulated, double>(s, p),
                  "Cpu against Emulated, double");
  check_identical(run_layer<backend::Cpu, float>(s, p), run_layer<backend::Emulated, float>(s, p),
                  "Cpu against Emulated, float");
}
