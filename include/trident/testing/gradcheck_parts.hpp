// trident/testing/gradcheck_parts.hpp: each part of a DecoderStage model (model/decoder_stage.hpp)
// against central finite differences, alone, on one process (TP 1), with its initial weights:
//   Embedding   L = sum(R * x(tokens; w))                   d/dw
//   Block l     L = sum(R * out(x; w_l)), every layer l     d/dx, d/dw_l
//   Head        L = mean of the tokens' losses (x; w)       d/dx, d/dw
// R and x random (fixed seed), tokens and targets random below the vocabulary. A wrong part is
// named here even where the whole model's check (gradcheck.hpp) only sees a wrong total.
#pragma once

#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "../model/decoder_stage.hpp"
#include "gradcheck.hpp"

namespace trident::testing {

// Whether M builds its Stage from parts (DecoderModel): it has layer_unit and a Block.
template <class M, class = void>
struct has_decoder_parts : std::false_type {};
template <class M>
struct has_decoder_parts<M, std::void_t<decltype(std::declval<const M&>().layer_unit(0)),
                                        typename M::template Block<double, backend::Cpu>>>
    : std::true_type {};

namespace detail {
using Cpu = backend::Cpu;
template <class T>
using HostBuffer = backend::DeviceBuffer<T, Cpu>;

inline std::vector<double> random_values(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}
inline double dot(const double* a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t k = 0; k < b.size(); ++k) s += a[k] * b[k];
  return s;
}
// A unit's initial values at TP 1 (the model's pure initial_value), one flat buffer.
template <class M>
std::vector<double> initial_unit(const M& model, const UnitSpec& spec) {
  const UnitLayout l = layout_unit(spec, 1, 0);
  std::vector<double> w(l.numel);
  initialise_unit(
      l, [&](const ParamSpec& p, std::uint64_t g) { return model.initial_value(p, g); }, w.data());
  return w;
}
// The parameters of a list of units, and the pointer arrays a part takes.
struct Units {
  std::vector<std::vector<double>> w, g;
  std::vector<const double*> wp;
  std::vector<double*> gp;
  template <class M>
  Units(const M& model, const std::vector<UnitSpec>& specs) {
    for (const UnitSpec& s : specs) w.push_back(initial_unit(model, s));
    for (auto& v : w) {
      g.emplace_back(v.size(), 0.0);
      wp.push_back(v.data());
    }
    for (auto& v : g) gp.push_back(v.data());
  }
  void check(GradientReport& r, const std::string& part, const std::vector<UnitSpec>& specs,
             const std::function<double()>& f) {
    for (std::size_t u = 0; u < w.size(); ++u)
      check_elements(r, part, specs[u].name, w[u].data(), g[u].data(), w[u].size(), f);
  }
};
inline std::vector<std::int32_t> random_tokens(std::size_t n, int vocab, std::mt19937& rng) {
  std::uniform_int_distribution<int> u(0, vocab - 1);
  std::vector<std::int32_t> t(n);
  for (auto& x : t) x = u(rng);
  return t;
}
}  // namespace detail

namespace detail {
// What the three parts' checks share: the model, one process's TP group, the rows.
template <class M>
struct PartCheck {
  const M& model;
  const TensorParallel<Cpu>& tp;
  int rows;
  std::size_t n, N;  // elements of a block's activation; tokens
  std::mt19937 rng{1234};
};

// Embedding: d/dw of sum(R * x(tokens; w)).
template <class M>
void check_embedding(PartCheck<M>& p, const std::vector<std::int32_t>& tokens, GradientReport& r) {
  const auto specs = p.model.embedding_units(1);
  Units u(p.model, specs);
  const typename M::template Embedding<double, Cpu> e(p.model.config(), p.tp, p.rows);
  const std::vector<double> R = random_values(p.n, p.rng);
  auto loss = [&] {
    HostBuffer<double> x(MemoryKind::buffers, p.n);
    e.forward(x.data(), tokens.data(), u.wp.data());
    return dot(x.data(), R);
  };
  e.backward(u.gp.data(), R.data(), tokens.data());
  u.check(r, "Embedding", specs, loss);
}

// Block l: d/dx and d/dw_l of sum(R * out(x; w_l)).
template <class M>
void check_block(PartCheck<M>& p, int l, GradientReport& r) {
  using Block = typename M::template Block<double, Cpu>;
  const Block block = block_of_layer<Block>(p.model.config(), p.tp, p.rows, l);
  const std::vector<UnitSpec> specs = {p.model.layer_unit(l)};
  Units u(p.model, specs);
  std::vector<double> x = random_values(p.n, p.rng);
  const std::vector<double> R = random_values(p.n, p.rng);
  auto forward = [&](typename Block::Activations& a, HostBuffer<double>& out) {
    a.x.allocate(MemoryKind::activations, p.n);
    std::copy(x.begin(), x.end(), a.x.data());
    block.forward(a, out.data(), u.wp[0], nn::BlockHalves::both);
  };
  auto loss = [&] {
    typename Block::Activations a;
    HostBuffer<double> out(MemoryKind::buffers, p.n);
    forward(a, out);
    return dot(out.data(), R);
  };
  typename Block::Activations a;
  typename Block::Gradients d;
  HostBuffer<double> out(MemoryKind::buffers, p.n);
  forward(a, out);
  std::vector<double> dx(p.n);
  block.backward(a, dx.data(), R.data(), u.wp[0], u.gp[0], d, nn::BackwardPart::both,
                 nn::BlockHalves::both);
  const std::string part = "Block " + std::to_string(l);
  check_elements(r, part, "x (input)", x.data(), dx.data(), p.n, loss);
  u.check(r, part, specs, loss);
}

// Head: d/dx and d/dw of the mean of the tokens' losses.
template <class M>
void check_head(PartCheck<M>& p, GradientReport& r) {
  using Head = typename M::template Head<double, Cpu>;
  const auto specs = p.model.head_units(1);
  Units u(p.model, specs);
  const Head h(p.model.config(), p.tp, p.rows);
  std::vector<double> x = random_values(p.n, p.rng);
  const std::vector<std::int32_t> targets = random_tokens(p.N, p.model.vocab(), p.rng);
  const double scale = 1.0 / double(p.N);
  auto forward = [&](typename Head::Activations& a) {
    HostBuffer<double> losses(MemoryKind::buffers, p.N);
    h.forward(a, losses.data(), x.data(), targets.data(), u.wp.data());
    double sum = 0;
    for (std::size_t k = 0; k < p.N; ++k) sum += losses.data()[k];
    return sum * scale;
  };
  auto loss = [&] {
    typename Head::Activations a;
    return forward(a);
  };
  typename Head::Activations a;
  (void)forward(a);
  std::vector<double> dx(p.n);
  h.backward(a, dx.data(), x.data(), targets.data(), u.wp.data(), u.gp.data(), scale,
             nn::BackwardPart::both);
  check_elements(r, "Head", "x (input)", x.data(), dx.data(), p.n, loss);
  u.check(r, "Head", specs, loss);
}
}  // namespace detail

// Embedding, every layer's Block and the Head of a decoder model (rows sequences).
template <class M>
GradientReport check_part_gradients(const Comm& world, const M& model, int rows = 2) {
  static_assert(has_decoder_parts<M>::value,
                "check_part_gradients needs a DecoderModel (Embedding, Block, Head)");
  const Comm self = world.split(world.rank(), 0, "gradcheck-parts");
  const TensorParallel<detail::Cpu> tp(&self);
  const std::size_t n =
      typename M::template Block<double, detail::Cpu>(model.config(), tp, rows).activation_size();
  detail::PartCheck<M> p{model, tp, rows, n, std::size_t(rows) * model.seq()};
  GradientReport r;
  const std::vector<std::int32_t> tokens = detail::random_tokens(p.N, model.vocab(), p.rng);
  detail::check_embedding(p, tokens, r);
  for (int l = 0; l < model.layers(); ++l) detail::check_block(p, l, r);
  detail::check_head(p, r);
  return r;
}

// The whole model, and each part when the model has decoder parts.
template <class M>
GradientReport check_gradients(const Comm& world, const M& model, const TokenSource& data,
                               const TrainOptions& base) {
  GradientReport r = check_model_gradients(world, model, data, base);
  if constexpr (has_decoder_parts<M>::value) {
    const GradientReport parts = check_part_gradients(world, model);
    r.checks.insert(r.checks.end(), parts.checks.begin(), parts.checks.end());
  }
  return r;
}

}  // namespace trident::testing
