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

  // Mean cross-entropy over the batch's seq*B tokens ([s, b] order), and its gradients
  // (overwritten).
  double forward_backward(const Microbatch& batch) {
    const Shape s = shape(batch);
    for (auto& [name, g] : grads_) std::fill(g.begin(), g.end(), T(0));
    std::vector<T> x(std::size_t(s.N) * s.C);
    nn::token_embedding_forward(x.data(), batch.inputs.data(), param("wte.weight"), s.N, s.C, 0,
                                s.V);
    nn::position_embedding_forward(x.data(), param("wpe.weight"), s.N, s.B, 0, s.C);
    std::vector<BlockActivations> blocks(c_.layers);
    for (int l = 0; l < c_.layers; ++l) block_forward(block_prefix(l), s, x, blocks[l]);
    HeadActivations head;
    const double loss = head_forward(s, batch, x, head);

    std::vector<T> dx = head_backward(s, batch, x, head);
    for (int l = c_.layers - 1; l >= 0; --l) block_backward(block_prefix(l), s, blocks[l], dx);
    nn::position_embedding_backward(grad("wpe.weight"), dx.data(), s.N, s.B, 0, s.C);
    nn::token_embedding_backward(grad("wte.weight"), dx.data(), batch.inputs.data(), s.N, s.C, 0,
                                 s.V);
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
  // The sizes of one microbatch: N = seq * B token rows of C features, V vocabulary entries,
  // H heads of D features.
  struct Shape {
    int seq, B, N, C, V, H, D;
  };
  // What a block's forward keeps for its backward: x, x2, ln1, att, ln2: (N, C); qkv: (N, 3C);
  // fc, act: (N, 4C); the LayerNorms' means and reciprocal deviations m, r: (N); probs:
  // (B, H, seq, seq).
  struct BlockActivations {
    std::vector<T> x, m1, r1, ln1, qkv, probs, att, x2, m2, r2, ln2, fc, act;
  };
  // What the head's forward keeps: the final LayerNorm's lnf (N, C) and m, r (N); the softmax
  // probs (N, V); logits (N, V), reused for their gradient.
  struct HeadActivations {
    std::vector<T> mf, rf, lnf, logits, probs;
  };

  Shape shape(const Microbatch& batch) const {
    return {c_.seq, batch.rows, c_.seq * batch.rows, c_.hidden, c_.vocab, c_.heads, c_.head_size()};
  }
  static std::string block_prefix(int l) { return "h." + std::to_string(l) + "."; }
  T* param(const std::string& name) { return params_.at(name).data(); }
  T* grad(const std::string& name) { return grads_.at(name).data(); }
  static std::vector<T> zeros(std::size_t n) { return std::vector<T>(n); }

  // One transformer block (pre-LayerNorm attention, then MLP, each added to the residual) on
  // the residual x: (N, C), in place; y keeps what the backward needs.
  void block_forward(const std::string& h, const Shape& s, std::vector<T>& x, BlockActivations& y) {
    const int N = s.N, C = s.C;
    y.x = x;
    y.m1 = zeros(N);
    y.r1 = zeros(N);
    y.ln1 = zeros(N * C);
    y.qkv = zeros(N * 3 * C);
    y.probs = zeros(std::size_t(s.B) * s.H * s.seq * s.seq);
    y.att = zeros(N * C);
    y.x2 = zeros(N * C);
    y.m2 = zeros(N);
    y.r2 = zeros(N);
    y.ln2 = zeros(N * C);
    y.fc = zeros(N * 4 * C);
    y.act = zeros(N * 4 * C);
    std::vector<T> proj = zeros(N * C);
    nn::layernorm_forward(y.ln1.data(), y.m1.data(), y.r1.data(), y.x.data(),
                          param(h + "ln_1.weight"), param(h + "ln_1.bias"), N, C);
    nn::linear_forward(y.qkv.data(), y.ln1.data(), param(h + "attn.c_attn.weight"),
                       param(h + "attn.c_attn.bias"), N, C, 3 * C);
    nn::attention_forward(y.att.data(), y.probs.data(), y.qkv.data(), s.B, s.seq, s.H, s.D);
    nn::linear_forward(proj.data(), y.att.data(), param(h + "attn.c_proj.weight"),
                       param(h + "attn.c_proj.bias"), N, C, C);
    for (int i = 0; i < N * C; ++i) y.x2[i] = y.x[i] + proj[i];
    nn::layernorm_forward(y.ln2.data(), y.m2.data(), y.r2.data(), y.x2.data(),
                          param(h + "ln_2.weight"), param(h + "ln_2.bias"), N, C);
    nn::linear_forward(y.fc.data(), y.ln2.data(), param(h + "mlp.c_fc.weight"),
                       param(h + "mlp.c_fc.bias"), N, C, 4 * C);
    nn::gelu_forward(y.act.data(), y.fc.data(), y.fc.size());
    nn::linear_forward(proj.data(), y.act.data(), param(h + "mlp.c_proj.weight"),
                       param(h + "mlp.c_proj.bias"), N, 4 * C, C);
    for (int i = 0; i < N * C; ++i) x[i] = y.x2[i] + proj[i];
  }

  // The block's backward: dx: (N, C), the gradient of its output in, of its input out.
  void block_backward(const std::string& h, const Shape& s, const BlockActivations& y,
                      std::vector<T>& dx) {
    const int N = s.N, C = s.C;
    std::vector<T> dact = zeros(N * 4 * C), dln = zeros(N * C), dtmp = zeros(N * C),
                   dx2 = zeros(N * C);
    std::vector<T> datt = zeros(N * C), dqkv = zeros(N * 3 * C);
    nn::linear_backward(dact.data(), grad(h + "mlp.c_proj.weight"), grad(h + "mlp.c_proj.bias"),
                        dx.data(), y.act.data(), param(h + "mlp.c_proj.weight"), N, 4 * C, C);
    nn::gelu_backward(dact.data(), dact.data(), y.fc.data(), dact.size());
    nn::linear_backward(dln.data(), grad(h + "mlp.c_fc.weight"), grad(h + "mlp.c_fc.bias"),
                        dact.data(), y.ln2.data(), param(h + "mlp.c_fc.weight"), N, C, 4 * C);
    nn::layernorm_backward(dtmp.data(), grad(h + "ln_2.weight"), grad(h + "ln_2.bias"), dln.data(),
                           y.x2.data(), param(h + "ln_2.weight"), y.m2.data(), y.r2.data(), N, C);
    for (int i = 0; i < N * C; ++i) dx2[i] = dx[i] + dtmp[i];
    nn::linear_backward(datt.data(), grad(h + "attn.c_proj.weight"), grad(h + "attn.c_proj.bias"),
                        dx2.data(), y.att.data(), param(h + "attn.c_proj.weight"), N, C, C);
    nn::attention_backward(dqkv.data(), datt.data(), y.qkv.data(), y.probs.data(), s.B, s.seq, s.H,
                           s.D);
    nn::linear_backward(dln.data(), grad(h + "attn.c_attn.weight"), grad(h + "attn.c_attn.bias"),
                        dqkv.data(), y.ln1.data(), param(h + "attn.c_attn.weight"), N, C, 3 * C);
    nn::layernorm_backward(dtmp.data(), grad(h + "ln_1.weight"), grad(h + "ln_1.bias"), dln.data(),
                           y.x.data(), param(h + "ln_1.weight"), y.m1.data(), y.r1.data(), N, C);
    for (int i = 0; i < N * C; ++i) dx[i] = dx2[i] + dtmp[i];
  }

  // Final LayerNorm, LM head tied to wte, softmax cross-entropy averaged over the N tokens of
  // the residual x: (N, C). Returns the mean loss.
  double head_forward(const Shape& s, const Microbatch& batch, const std::vector<T>& x,
                      HeadActivations& y) {
    const int N = s.N, C = s.C, V = s.V;
    y.mf = zeros(N);
    y.rf = zeros(N);
    y.lnf = zeros(N * C);
    y.probs = zeros(std::size_t(N) * V);
    std::vector<T> losses = zeros(N);
    nn::layernorm_forward(y.lnf.data(), y.mf.data(), y.rf.data(), x.data(), param("ln_f.weight"),
                          param("ln_f.bias"), N, C);
    y.logits = zeros(std::size_t(N) * V);
    backend::gemm(backend::view(y.logits.data(), N, V), backend::cview(y.lnf.data(), N, C),
                  backend::cview(param("wte.weight"), V, C), false, true, T(0));
    nn::cross_entropy_forward(losses.data(), y.probs.data(), y.logits.data(), batch.targets.data(),
                              N, V, 0, V);
    double loss = 0;
    for (T l : losses) loss += l;
    return loss / N;
  }

  // The head's backward for the mean loss; returns the gradient of the residual x: (N, C).
  std::vector<T> head_backward(const Shape& s, const Microbatch& batch, const std::vector<T>& x,
                               HeadActivations& y) {
    const int N = s.N, C = s.C, V = s.V;
    const T scale = T(1) / T(N);
    nn::cross_entropy_backward(y.logits.data(), y.probs.data(), batch.targets.data(), scale, N, V,
                               0);
    backend::gemm(backend::view(grad("wte.weight"), V, C), backend::cview(y.logits.data(), N, V),
                  backend::cview(y.lnf.data(), N, C), true, false, T(1));
    std::vector<T> dlnf = zeros(N * C), dx = zeros(N * C);
    backend::gemm(backend::view(dlnf.data(), N, C), backend::cview(y.logits.data(), N, V),
                  backend::cview(param("wte.weight"), V, C), false, false, T(0));
    nn::layernorm_backward(dx.data(), grad("ln_f.weight"), grad("ln_f.bias"), dlnf.data(), x.data(),
                           param("ln_f.weight"), y.mf.data(), y.rf.data(), N, C);
    return dx;
  }

  Config c_;
  Tensors params_, grads_, m_, v_;
  std::vector<ParamSpec> specs_;
};

}  // namespace trident::gpt2
