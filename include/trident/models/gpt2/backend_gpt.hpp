// trident/models/gpt2/backend_gpt.hpp: GPT-2 trained on one rank of a backend B, everything in
// B's memory: the parameters, gradients and AdamW moments of every unit, the activations, the
// forward and backward (the parts of backend_block.hpp and backend_ends.hpp) and the AdamW
// update (backend/kernels/adamw.hpp). What a GPU runs against the single-process reference
// (gpt2::ReferenceGPT) while the trainer's stage and ZeRO store still hold host memory
// (backend_model.hpp); with backend::Cpu the same code runs in the CPU tests.
//
// Units as the model declares them (all_units: "wte", "wpe", "h.{i}", "ln_f"), each one flat
// buffer laid out as the UnitStore lays it out at TP = 1; the LM head reads "wte" (tied).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "../../backend/kernels/adamw.hpp"
#include "../../optim/adamw.hpp"
#include "backend_block.hpp"
#include "backend_ends.hpp"

namespace trident::gpt2 {

template <class T, class B>
class BackendGPT {
  using Buf = backend::DeviceBuffer<T, B>;

 public:
  // rows: sequences per batch (one microbatch).
  BackendGPT(const Config& c, int rows)
      : c_(c), rows_(rows), embedding_(c, rows), block_(c, rows), head_(c, rows) {
    c.validate();
    for (const UnitSpec& u : all_units(c)) {
      layouts_.push_back(layout_unit(u, 1, 0));
      const std::size_t n = layouts_.back().numel;
      std::vector<T> host(n);
      initialise_unit(
          layouts_.back(),
          [&](const ParamSpec& p, std::uint64_t g) { return initial_value(c, p, g); }, host.data());
      params_.emplace_back(MemoryKind::parameters, n, Fill::none);
      backend::upload(params_.back(), host.data());
      grads_.emplace_back(MemoryKind::gradients, n);
      m_.emplace_back(MemoryKind::optimizer, n);
      v_.emplace_back(MemoryKind::optimizer, n);
    }
  }

  // The summed cross-entropy of the batch's seq*rows tokens times 1/(seq*rows) (the mean), and
  // the gradients of that mean (overwritten).
  double forward_backward(const Microbatch& batch) {
    for (Buf& g : grads_) B::zero(g.data(), g.bytes());
    const int L = c_.layers, N = rows_ * c_.seq;
    const T scale = T(1) / T(N);
    const std::size_t size = block_.activation_size();
    std::vector<typename BackendBlock<T, B>::Activations> blocks(L);
    for (auto& a : blocks) a.x.allocate(MemoryKind::activations, size, Fill::none);
    Buf head_input(MemoryKind::activations, size, Fill::none);
    embedding_.forward(blocks[0].x.data(), batch, w({kWte, kWpe}).data());
    for (int l = 0; l < L; ++l)
      block_.forward(blocks[l], l + 1 < L ? blocks[l + 1].x.data() : head_input.data(),
                     params_[layer(l)].data());
    typename BackendHead<T, B>::Activations head;
    const double loss =
        head_.forward(head, head_input.data(), batch, w({ln_f(), kWte}).data(), scale);
    Buf d(MemoryKind::buffers, size, Fill::none), dnext(MemoryKind::buffers, size, Fill::none);
    head_.backward(head, d.data(), head_input.data(), batch, w({ln_f(), kWte}).data(),
                   g({ln_f(), kWte}).data(), scale, nn::BackwardPart::both);
    for (int l = L - 1; l >= 0; --l) {
      block_.backward(blocks[l], dnext.data(), d.data(), params_[layer(l)].data(),
                      grads_[layer(l)].data());
      blocks[l] = {};
      std::swap(d, dnext);
    }
    embedding_.backward(g({kWte, kWpe}).data(), d.data(), batch);
    return loss;
  }

  // The global 2-norm of the gradients (summed on the host in double, unit by unit).
  double grad_norm() const {
    double sum = 0;
    for (const Buf& g : grads_)
      for (T x : to_host(g)) sum += double(x) * double(x);
    return std::sqrt(sum);
  }

  // Clipping by the global norm, then AdamW at step t (1-based), on B. Returns the norm.
  double step(const AdamW& opt, int t) {
    const double norm = grad_norm(), scale = opt.clip_scale(norm), lr = opt.lr_at(t - 1);
    for (std::size_t u = 0; u < layouts_.size(); ++u)
      for (const LocalParam& p : layouts_[u].params) {
        const auto s = backend::kernels::AdamWStep<T>::make(
            opt.beta1, opt.beta2, opt.eps, opt.weight_decay, t, lr, p.spec.decay, scale);
        backend::kernels::adamw_update<B>(params_[u].data() + p.offset, grads_[u].data() + p.offset,
                                          m_[u].data() + p.offset, v_[u].data() + p.offset,
                                          int(p.numel), s);
      }
    return norm;
  }

  // Every parameter by name, copied to the host.
  std::vector<std::pair<std::string, std::vector<T>>> parameters() const {
    std::vector<std::pair<std::string, std::vector<T>>> out;
    for (std::size_t u = 0; u < layouts_.size(); ++u) {
      const std::vector<T> all = to_host(params_[u]);
      for (const LocalParam& p : layouts_[u].params)
        out.push_back({p.spec.name,
                       std::vector<T>(all.begin() + p.offset, all.begin() + p.offset + p.numel)});
    }
    return out;
  }

 private:
  enum : int { kWte = 0, kWpe = 1 };
  int layer(int l) const { return 2 + l; }
  int ln_f() const { return 2 + c_.layers; }
  std::vector<const T*> w(std::initializer_list<int> units) const {
    std::vector<const T*> out;
    for (int u : units) out.push_back(params_[u].data());
    return out;
  }
  std::vector<T*> g(std::initializer_list<int> units) {
    std::vector<T*> out;
    for (int u : units) out.push_back(grads_[u].data());
    return out;
  }
  static std::vector<T> to_host(const Buf& b) {
    std::vector<T> h(b.size());
    backend::download(b, h.data());
    return h;
  }

  Config c_;
  int rows_;
  BackendEmbedding<T, B> embedding_;
  BackendBlock<T, B> block_;
  BackendHead<T, B> head_;
  std::vector<UnitLayout> layouts_;
  std::vector<Buf> params_, grads_, m_, v_;
};

}  // namespace trident::gpt2
