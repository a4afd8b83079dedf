// trident/models/gpt2/reference.hpp: the single-process GPT-2 — the plainest composition of nn/
// over full, unsharded weights: no mesh, no schedule, no ZeRO (ARCHITECTURE §1). Every parallel
// configuration is tested against it, so a bug in the parallel machinery cannot hide on both
// sides of the comparison.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "../../backend/cpu/gemm.hpp"
#include "../../data/tokens.hpp"
#include "../../nn/nn.hpp"
#include "../../optim/adamw.hpp"
#include "params.hpp"

namespace trident::gpt2 {

template <class T>
class ReferenceGPT {
 public:
  using Tensors = std::map<std::string, std::vector<T>>;

  explicit ReferenceGPT(const Config& c) : c_(c) {
    c.validate();
    for (const UnitSpec& u : all_units(c))
      for (const LocalParam& p : layout_unit(u, 1, 0).params) {
        std::vector<T>& v = params_[p.spec.name];
        v.resize(p.numel);
        fill_local(p.layout, v.data(), [&](std::int64_t g) {
          return gpt2::initial_value(c, p.spec, std::uint64_t(g));
        });
        specs_.push_back(p.spec);
      }
    for (auto& [name, v] : params_) {
      grads_[name].assign(v.size(), T(0));
      m_[name].assign(v.size(), T(0));
      v_[name].assign(v.size(), T(0));
    }
  }

  Tensors& params() { return params_; }
  const Tensors& grads() const { return grads_; }
  const std::vector<ParamSpec>& specs() const { return specs_; }

  // Mean cross-entropy over the batch's S*B tokens ([s, b] order), and its gradients
  // (overwritten).
  double forward_backward(const Microbatch& batch) {
    const int S = c_.seq, B = batch.rows, N = S * B, C = c_.hidden, V = c_.vocab, L = c_.layers;
    const int H = c_.heads, D = c_.head_size();
    for (auto& [name, g] : grads_) std::fill(g.begin(), g.end(), T(0));
    auto P = [&](const std::string& n) { return params_.at(n).data(); };
    auto G = [&](const std::string& n) { return grads_.at(n).data(); };
    auto vec = [](std::size_t n) { return std::vector<T>(n); };
    struct Layer {
      std::vector<T> x, m1, r1, ln1, qkv, probs, att, x2, m2, r2, ln2, fc, act;
    };
    std::vector<Layer> a(L);
    std::vector<T> x = vec(N * C);
    nn::token_embedding_forward(x.data(), batch.inputs.data(), P("wte.weight"), N, C, 0, V);
    nn::position_embedding_forward(x.data(), P("wpe.weight"), N, B, 0, C);
    for (int l = 0; l < L; ++l) {
      const std::string h = "h." + std::to_string(l) + ".";
      Layer& y = a[l];
      y.x = x, y.m1 = vec(N), y.r1 = vec(N), y.ln1 = vec(N * C), y.qkv = vec(N * 3 * C);
      y.probs = vec(std::size_t(B) * H * S * S), y.att = vec(N * C), y.x2 = vec(N * C);
      y.m2 = vec(N), y.r2 = vec(N), y.ln2 = vec(N * C), y.fc = vec(N * 4 * C),
      y.act = vec(N * 4 * C);
      std::vector<T> proj = vec(N * C);
      nn::layernorm_forward(y.ln1.data(), y.m1.data(), y.r1.data(), y.x.data(),
                            P(h + "ln_1.weight"), P(h + "ln_1.bias"), N, C);
      nn::linear_forward(y.qkv.data(), y.ln1.data(), P(h + "attn.c_attn.weight"),
                         P(h + "attn.c_attn.bias"), N, C, 3 * C);
      nn::attention_forward(y.att.data(), y.probs.data(), y.qkv.data(), B, S, H, D);
      nn::linear_forward(proj.data(), y.att.data(), P(h + "attn.c_proj.weight"),
                         P(h + "attn.c_proj.bias"), N, C, C);
      for (int i = 0; i < N * C; ++i) y.x2[i] = y.x[i] + proj[i];
      nn::layernorm_forward(y.ln2.data(), y.m2.data(), y.r2.data(), y.x2.data(),
                            P(h + "ln_2.weight"), P(h + "ln_2.bias"), N, C);
      nn::linear_forward(y.fc.data(), y.ln2.data(), P(h + "mlp.c_fc.weight"),
                         P(h + "mlp.c_fc.bias"), N, C, 4 * C);
      nn::gelu_forward(y.act.data(), y.fc.data(), y.fc.size());
      nn::linear_forward(proj.data(), y.act.data(), P(h + "mlp.c_proj.weight"),
                         P(h + "mlp.c_proj.bias"), N, 4 * C, C);
      for (int i = 0; i < N * C; ++i) x[i] = y.x2[i] + proj[i];
    }
    // final LayerNorm, LM head tied to wte, softmax cross-entropy averaged over the N tokens
    std::vector<T> mf = vec(N), rf = vec(N), lnf = vec(N * C), probs = vec(std::size_t(N) * V),
                   losses = vec(N);
    nn::layernorm_forward(lnf.data(), mf.data(), rf.data(), x.data(), P("ln_f.weight"),
                          P("ln_f.bias"), N, C);
    std::vector<T> logits = vec(std::size_t(N) * V);
    backend::gemm(backend::view(logits.data(), N, V), backend::cview(lnf.data(), N, C),
                  backend::cview(P("wte.weight"), V, C), false, true, T(0));
    nn::cross_entropy_forward(losses.data(), probs.data(), logits.data(), batch.targets.data(), N,
                              V, 0, V);
    double loss = 0;
    for (T l : losses) loss += l;
    loss /= N;

    // backward
    const T scale = T(1) / T(N);
    nn::cross_entropy_backward(logits.data(), probs.data(), batch.targets.data(), scale, N, V, 0);
    backend::gemm(backend::view(G("wte.weight"), V, C), backend::cview(logits.data(), N, V),
                  backend::cview(lnf.data(), N, C), true, false, T(1));
    std::vector<T> dlnf = vec(N * C), dx = vec(N * C);
    backend::gemm(backend::view(dlnf.data(), N, C), backend::cview(logits.data(), N, V),
                  backend::cview(P("wte.weight"), V, C), false, false, T(0));
    nn::layernorm_backward(dx.data(), G("ln_f.weight"), G("ln_f.bias"), dlnf.data(), x.data(),
                           P("ln_f.weight"), mf.data(), rf.data(), N, C);
    for (int l = L - 1; l >= 0; --l) {
      const std::string h = "h." + std::to_string(l) + ".";
      const Layer& y = a[l];
      std::vector<T> dact = vec(N * 4 * C), dln = vec(N * C), dtmp = vec(N * C), dx2 = vec(N * C);
      std::vector<T> datt = vec(N * C), dqkv = vec(N * 3 * C);
      nn::linear_backward(dact.data(), G(h + "mlp.c_proj.weight"), G(h + "mlp.c_proj.bias"),
                          dx.data(), y.act.data(), P(h + "mlp.c_proj.weight"), N, 4 * C, C);
      nn::gelu_backward(dact.data(), dact.data(), y.fc.data(), dact.size());
      nn::linear_backward(dln.data(), G(h + "mlp.c_fc.weight"), G(h + "mlp.c_fc.bias"), dact.data(),
                          y.ln2.data(), P(h + "mlp.c_fc.weight"), N, C, 4 * C);
      nn::layernorm_backward(dtmp.data(), G(h + "ln_2.weight"), G(h + "ln_2.bias"), dln.data(),
                             y.x2.data(), P(h + "ln_2.weight"), y.m2.data(), y.r2.data(), N, C);
      for (int i = 0; i < N * C; ++i) dx2[i] = dx[i] + dtmp[i];
      nn::linear_backward(datt.data(), G(h + "attn.c_proj.weight"), G(h + "attn.c_proj.bias"),
                          dx2.data(), y.att.data(), P(h + "attn.c_proj.weight"), N, C, C);
      nn::attention_backward(dqkv.data(), datt.data(), y.qkv.data(), y.probs.data(), B, S, H, D);
      nn::linear_backward(dln.data(), G(h + "attn.c_attn.weight"), G(h + "attn.c_attn.bias"),
                          dqkv.data(), y.ln1.data(), P(h + "attn.c_attn.weight"), N, C, 3 * C);
      nn::layernorm_backward(dtmp.data(), G(h + "ln_1.weight"), G(h + "ln_1.bias"), dln.data(),
                             y.x.data(), P(h + "ln_1.weight"), y.m1.data(), y.r1.data(), N, C);
      for (int i = 0; i < N * C; ++i) dx[i] = dx2[i] + dtmp[i];
    }
    nn::position_embedding_backward(G("wpe.weight"), dx.data(), N, B, 0, C);
    nn::token_embedding_backward(G("wte.weight"), dx.data(), batch.inputs.data(), N, C, 0, V);
    return loss;
  }

  // Global gradient norm.
  double grad_norm() const {
    double sum = 0;
    for (const auto& [name, g] : grads_)
      for (T x : g) sum += double(x) * double(x);
    return std::sqrt(sum);
  }

  // Clipping by the global norm, then AdamW at step t (1-based). Returns the norm.
  double step(const AdamW& opt, int t) {
    const double norm = grad_norm(), scale = opt.clip_scale(norm), lr = opt.lr_at(t - 1);
    for (const ParamSpec& s : specs_) {
      std::vector<T>& p = params_.at(s.name);
      opt.update(p.data(), grads_.at(s.name).data(), m_.at(s.name).data(), v_.at(s.name).data(),
                 p.size(), t, lr, s.decay, scale);
    }
    return norm;
  }

 private:
  Config c_;
  Tensors params_, grads_, m_, v_;
  std::vector<ParamSpec> specs_;
};

}  // namespace trident::gpt2
