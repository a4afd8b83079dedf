// trident/models/llama/block.hpp: one Llama decoder block on one tensor-parallel rank, forward
// and backward side by side (Touvron et al. 2023, "LLaMA", §2.2).
//
//   x2  = x  + RowParallel(Attention(RoPE(QKV(RMSNorm1(x)))))     grouped-query attention half
//   out = x2 + RowParallel(SwiGLU(ColumnParallel(RMSNorm2(x2))))   SwiGLU MLP half
//
// Either half may run alone (nn/block_halves.hpp: a pipeline stage boundary between them). In an
// MoE layer (Config::is_moe) the MLP is a mixture of experts (moe_mlp.hpp).
// QKV and gate/up are column-parallel, o and down row-parallel (Megatron-LM §3): one TP
// all-reduce per half in forward and one in backward; with sequence parallelism an all-gather
// and a reduce-scatter instead, and x, x2 are this rank's sequence shard. No biases.
// Every buffer is in backend B's memory and every kernel launched through B (nn/, tp/).
// Sizes: seq tokens per sequence, batch sequences, N = seq*batch rows, n = tp.local_rows(N) rows
// in the norm/residual regions, C hidden, Hl = H/t query heads and KVl = KV/t key/value heads of D
// on this rank, packed qkv rows of Wd = (Hl + 2 KVl) D, Fl = F/t MLP columns.
#pragma once

#include <array>
#include <optional>

#include "../../backend/device_buffer.hpp"
#include "../../cp/attention.hpp"
#include "../../nn/attention.hpp"
#include "../../nn/block_halves.hpp"
#include "../../nn/residual.hpp"
#include "../../nn/rmsnorm.hpp"
#include "../../nn/rope.hpp"
#include "../../nn/swiglu.hpp"
#include "../../tp/linear.hpp"
#include "moe_mlp.hpp"
#include "params.hpp"
#include "qkv.hpp"

namespace trident::llama {

// What a block's backward needs from its forward (kept per microbatch).
template <class T, class B>
struct BlockActivations {
  using Buf = backend::DeviceBuffer<T, B>;
  Buf x;                     // (n, C) input: the residual stream
  Buf rstd1;                 // (n) RMSNorm1's 1/rms
  Buf norm1;                 // (N, C) RMSNorm1's output as QKV saw it (gathered under SP)
  Buf qkv;                   // (N, Wd) q, k rotated by RoPE, v
  Buf probs;                 // (B, Hl, seq, cp seq)
  Buf att;                   // (N, Hl D)
  Buf x2;                    // (n, C) residual after attention
  Buf rstd2;                 // (n)
  Buf norm2;                 // (N, C)
  Buf gate_up;               // (N, 2 Fl) [gate | up]
  Buf act;                   // (N, Fl) SwiGLU(gate, up)
  MoeActivations<T, B> moe;  // an MoE layer's MLP (gate_up and act unused)

  // After the input half of the backward (B): frees what only B reads (the rotated qkv, the
  // attention probabilities, gate/up before SwiGLU); the weight half (W) reads the rest.
  void drop_what_weight_gradients_do_not_need() {
    qkv.reset();
    probs.reset();
    gate_up.reset();
    moe.drop_what_weight_gradients_do_not_need();
  }
  // Selective recomputation (Korthikanti et al. 2022 §5; model/decoder_stage.hpp): after the
  // forward, frees the attention core's probabilities; the backward recomputes them from qkv.
  void drop_attention_core() { probs.reset(); }
};

// The gradients of a block's layer outputs: written by the input half of the backward (B), read
// by the weight half (W) together with the layers' inputs in BlockActivations (Qi et al. 2023).
template <class T, class B>
struct BlockGradients {
  using Buf = backend::DeviceBuffer<T, B>;
  Buf dout;                 // (n, C) the block's output gradient: down's dy
  Buf dy_mlp, dy_attn;      // (N, C) under SP: the row-parallel layers' dy gathered
  Buf d_gate_up;            // (N, 2 Fl) gate/up's dy (after SwiGLU's backward)
  Buf dnorm2, dx2, dnorm1;  // (n, C) RMSNorm2's dy, o's dy, RMSNorm1's dy
  Buf d_qkv;                // (N, Wd) QKV's dy (after RoPE's backward)
  MoeGradients<T, B> moe;   // an MoE layer's MLP (d_gate_up unused)
};

// The decoder block of model/decoder_stage.hpp's interface, on backend B.
template <class T, class B>
class Block {
  using Buf = backend::DeviceBuffer<T, B>;

 public:
  using Activations = BlockActivations<T, B>;
  using Gradients = BlockGradients<T, B>;
  // Its backward takes the loss's scale (model/decoder_stage.hpp): the load-balancing loss.
  static constexpr bool kAddsToLoss = true;

  // layer: the model's layer this block computes (its MLP is dense or a mixture of experts).
  Block(const Config& c, const TensorParallel<B>& tp, int batch, int layer = 0)
      : tp_(tp),
        seq_(tp.local_seq(c.seq)),
        B_(batch),
        C_(c.hidden),
        Hl_(c.heads / tp.size()),
        KVl_(c.kv_heads / tp.size()),
        D_(c.head_size()),
        Fl_(c.ffn() / tp.size()),
        eps_(T(c.norm_eps)),
        rope_(seq_, c.head_size(), c.rope_theta, tp.positions(seq_)) {
    const UnitLayout layout = layout_unit(block_unit(c, layer), tp.size(), tp.rank());
    for (std::size_t k = 0; k < layout.params.size(); ++k) offset_[k] = layout.params[k].offset;
    if (c.is_moe(layer)) moe_.emplace(c, tp, seq_, batch);
    qkv_.in = C_;
    qkv_.q = Hl_ * D_;
    qkv_.kv = KVl_ * D_;
    o_ = {Hl_ * D_, C_};
    gate_up_ = {C_, 2 * Fl_};
    down_ = {Fl_, C_};
  }

  int rows() const { return seq_ * B_; }
  int local_rows() const { return tp_.local_rows(rows()); }
  // Elements of the keys and values of this rank's tokens: what the CP ring passes per step.
  std::size_t ring_block_size() const { return std::size_t(rows()) * 2 * KVl_ * D_; }
  // Elements of the residual stream a block takes and gives: (n, C).
  std::size_t activation_size() const { return std::size_t(local_rows()) * C_; }

  // a.x holds the input; fills a; writes the block's output to out (n, C). w: the unit's params.
  // halves (nn/block_halves.hpp): attention only writes x2 to out; mlp only takes x2 in a.x.
  void forward(Activations& a, T* out, const T* w,
               nn::BlockHalves halves = nn::BlockHalves::both) const {
    const std::size_t N = rows(), n = local_rows(), Wd = qkv_.width();
    const bool attention = nn::runs_attention(halves), mlp = nn::runs_mlp(halves);
    auto act = [&](Buf& b, std::size_t size) {  // overwritten below: not zeroed
      b.allocate(MemoryKind::activations, size, Fill::none);
    };
    if (attention) {
      act(a.rstd1, n), act(a.norm1, N * C_), act(a.qkv, N * Wd);
      act(a.probs, std::size_t(B_) * Hl_ * seq_ * seq_ * tp_.cp.size()), act(a.att, N * Hl_ * D_);
    }
    if (mlp) {
      if (attention) act(a.x2, n * C_);
      const std::size_t dense = moe_ ? 0 : N;
      act(a.rstd2, n), act(a.norm2, N * C_), act(a.gate_up, dense * 2 * Fl_);
      act(a.act, dense * Fl_);
    }
    const bool sp = tp_.sequence_parallel;
    Buf norm_local(MemoryKind::buffers, sp ? n * C_ : 0, Fill::none);
    // the row-parallel layers' output; without SP their partial sums are reduced in place
    Buf y(MemoryKind::buffers, n * C_, Fill::none),
        y_partial(MemoryKind::buffers, sp ? N * C_ : 0, Fill::none);
    T* partial = sp ? y_partial.data() : y.data();
    T* norm_out1 = sp ? norm_local.data() : a.norm1.data();
    T* norm_out2 = sp ? norm_local.data() : a.norm2.data();
    const T* x2 = attention ? a.x2.data() : a.x.data();
    const T* no_bias = nullptr;

    if (attention) {
      nn::rmsnorm_forward<B>(norm_out1, a.rstd1.data(), a.x.data(), w + offset_[kAttnNorm], int(n),
                             C_, eps_);
      qkv_.forward(tp_, a.qkv.data(), norm_out1, a.norm1.data(), qkv_weights(w), int(N));
      nn::rope_forward<B>(a.qkv.data(), rope_, int(N), B_, Hl_ + KVl_, int(Wd));  // q and k
      attention_forward(tp_.cp, a.att.data(), a.probs.data(), a.qkv.data(), B_, seq_, Hl_, KVl_,
                        D_);
      o_.forward(tp_, y.data(), partial, a.att.data(), w + offset_[kO], nullptr, int(N));
    }
    if (attention && mlp)  // x2 = x + y and RMSNorm2(x2) in one pass (nn/residual.hpp)
      nn::residual_rmsnorm_forward<B>(a.x2.data(), norm_out2, a.rstd2.data(), a.x.data(), y.data(),
                                      no_bias, w + offset_[kMlpNorm], int(n), C_, eps_);
    else if (attention)  // the stage ends here: x2 is its output
      nn::residual_forward<B>(out, a.x.data(), y.data(), no_bias, int(n), C_);
    else
      nn::rmsnorm_forward<B>(norm_out2, a.rstd2.data(), x2, w + offset_[kMlpNorm], int(n), C_,
                             eps_);
    if (!mlp) return;
    if (moe_) {  // the experts' partial sums, reduced by g as a row-parallel layer's
      const T* used = tp_.f_forward(norm_out2, a.norm2.data(), int(N), C_);
      moe_->forward(a.moe, partial, used, w + offset_[kRouter], w + offset_[kExpertsGateUp],
                    w + offset_[kExpertsDown]);
      tp_.g_forward(y.data(), partial, int(N), C_);
    } else {
      gate_up_.forward(tp_, a.gate_up.data(), norm_out2, a.norm2.data(), w + offset_[kGateUp],
                       nullptr, int(N));
      nn::swiglu_forward<B>(a.act.data(), a.gate_up.data(), a.gate_up.data() + Fl_, int(N), Fl_,
                            2 * Fl_);
      down_.forward(tp_, y.data(), partial, a.act.data(), w + offset_[kDown], nullptr, int(N));
    }
    nn::residual_forward<B>(out, x2, y.data(), no_bias, int(n), C_);
  }

  // The loss term this microbatch's forward added (MoE's load-balancing loss, in the loss's
  // units: scale is the loss's), and the tokens routed to each expert; 0 and none when dense.
  double loss_term(const Activations& a, T scale) const {
    return moe_ ? moe_->loss_term(a.moe, double(scale) * seq_) : 0.0;
  }
  const std::vector<int>& expert_tokens(const Activations& a) const { return a.moe.counts; }

  // One half, or both, of the backward (nn/backward_part.hpp). dout: (n, C) the output's
  // gradient; dx: (n, C) the input's (overwritten). input: writes dx and fills d (g unused, may
  // be null); weight: accumulates into g, the unit's gradients, from a and d (dx, dout, w unused).
  // halves as in forward: attention only takes x2's gradient as dout, mlp only writes x2's as dx.
  // loss_scale: the loss's scale (1 / the global batch's tokens), for the load-balancing loss.
  void backward(const Activations& a, T* dx, const T* dout, const T* w, T* g, Gradients& d,
                nn::BackwardPart part, nn::BlockHalves halves = nn::BlockHalves::both,
                T loss_scale = T(0)) const {
    const std::size_t N = rows(), n = local_rows(), Wd = qkv_.width();
    const bool sp = tp_.sequence_parallel, in = nn::computes_input(part);
    const bool attention = nn::runs_attention(halves), mlp = nn::runs_mlp(halves);
    if (in) {  // kept until W (activations) when W runs later, scratch when fused
      auto keep = [&](Buf& b, std::size_t size) { b.allocate(kept(part), size, Fill::none); };
      keep(d.dy_mlp, sp && mlp ? N * C_ : 0), keep(d.dy_attn, sp && attention ? N * C_ : 0);
      keep(d.d_gate_up, mlp && !moe_ ? N * 2 * Fl_ : 0), keep(d.dnorm2, mlp ? n * C_ : 0);
      keep(d.dx2, mlp && attention ? n * C_ : 0);
      keep(d.dnorm1, attention ? n * C_ : 0), keep(d.d_qkv, attention ? N * Wd : 0);
      if (part == nn::BackwardPart::input)
        keep(d.dout, n * C_), B::copy(d.dout.data(), dout, n * C_ * sizeof(T));
    }
    const T* dy = part == nn::BackwardPart::weight ? d.dout.data() : dout;
    // all overwritten before they are read
    Buf d_att(MemoryKind::buffers, in && attention ? N * Hl_ * D_ : 0, Fill::none),
        dnorm_full(MemoryKind::buffers, in && sp ? N * C_ : 0, Fill::none);
    auto W = [&](int k) { return w ? w + offset_[k] : nullptr; };
    auto G = [&](int k) { return g ? g + offset_[k] : nullptr; };

    if (mlp) {  // MLP half: out = x2 + mlp(rmsnorm2(x2))
      T* dnorm = sp ? dnorm_full.data() : d.dnorm2.data();
      if (moe_)
        moe_backward(a, d, dnorm, dy, w, g, part, loss_scale);
      else
        dense_backward(a, d, dnorm, dy, w, g, part);
      // dx2 = dy + RMSNorm2's input gradient, in one pass (input half)
      nn::rmsnorm_backward<B>(attention ? d.dx2.data() : dx, G(kMlpNorm), d.dnorm2.data(),
                              attention ? a.x2.data() : a.x.data(), W(kMlpNorm), a.rstd2.data(),
                              int(n), C_, part, dy);
    }
    if (!attention) return;
    // attention half: x2 = x + o(attention(rope(qkv(rmsnorm1(x)))))
    const T* dx2 = mlp ? d.dx2.data() : dy;
    o_.backward(tp_, d_att.data(), G(kO), nullptr, dx2, d.dy_attn.data(), a.att.data(), W(kO),
                int(N), part);
    if (in) {  // the probabilities kept, or recomputed from the rotated qkv (selective)
      Buf recomputed;
      const T* probs = attention_probabilities(tp_.cp, recomputed, a.probs, a.qkv.data(), B_, seq_,
                                               Hl_, KVl_, D_);
      attention_backward(tp_.cp, d.d_qkv.data(), d_att.data(), a.qkv.data(), a.att.data(), probs,
                         B_, seq_, Hl_, KVl_, D_);
      nn::rope_backward<B>(d.d_qkv.data(), rope_, int(N), B_, Hl_ + KVl_, int(Wd));
    }
    qkv_.backward(tp_, d.dnorm1.data(), sp ? dnorm_full.data() : d.dnorm1.data(),
                  {G(kQ), G(kK), G(kV)}, d.d_qkv.data(), a.norm1.data(), qkv_weights(w), int(N),
                  part);
    // dx = dx2 + RMSNorm1's input gradient
    nn::rmsnorm_backward<B>(dx, G(kAttnNorm), d.dnorm1.data(), a.x.data(), W(kAttnNorm),
                            a.rstd1.data(), int(n), C_, part, dx2);
  }

 private:
  // Where the backward's input half keeps what its weight half reads: the activations' memory
  // when W runs later, scratch when fused.
  static MemoryKind kept(nn::BackwardPart part) {
    return part == nn::BackwardPart::both ? MemoryKind::buffers : MemoryKind::activations;
  }
  // The dense MLP: down(swiglu(gate_up(.))). dy: (n, C) -> d.dnorm2: (n, C) through dnorm:
  // (N, C) (d.dnorm2 itself without SP); the weights' gradients into g.
  void dense_backward(const Activations& a, Gradients& d, T* dnorm, const T* dy, const T* w, T* g,
                      nn::BackwardPart part) const {
    const int N = rows();
    const bool in = nn::computes_input(part);
    Buf d_act(MemoryKind::buffers, in ? std::size_t(N) * Fl_ : 0, Fill::none);
    auto W = [&](int k) { return w ? w + offset_[k] : nullptr; };
    auto G = [&](int k) { return g ? g + offset_[k] : nullptr; };
    down_.backward(tp_, d_act.data(), G(kDown), nullptr, dy, d.dy_mlp.data(), a.act.data(),
                   W(kDown), N, part);
    if (in)
      nn::swiglu_backward<B>(d.d_gate_up.data(), d.d_gate_up.data() + Fl_, d_act.data(),
                             a.gate_up.data(), a.gate_up.data() + Fl_, N, Fl_, 2 * Fl_);
    gate_up_.backward(tp_, d.dnorm2.data(), dnorm, G(kGateUp), nullptr, d.d_gate_up.data(),
                      a.norm2.data(), W(kGateUp), N, part);
  }
  // The mixture of experts, as dense_backward; the router's input gradient is added after f.
  void moe_backward(const Activations& a, Gradients& d, T* dnorm, const T* dy, const T* w, T* g,
                    nn::BackwardPart part, T loss_scale) const {
    const int N = rows();
    if (nn::computes_input(part)) {
      const T* dy_full = tp_.g_backward(dy, d.dy_mlp.data(), N, C_);
      // the loss's weight of a sequence: scale x its tokens (1 / the global batch's sequences)
      moe_->backward_input(a.moe, d.moe, dnorm, dy_full, w + offset_[kExpertsGateUp],
                           w + offset_[kExpertsDown], loss_scale * T(seq_), kept(part));
      tp_.f_backward(d.dnorm2.data(), dnorm, N, C_);
      moe_->add_router_input_gradient(d.dnorm2.data(), d.moe, w + offset_[kRouter]);
    }
    if (nn::computes_weights(part))
      moe_->backward_weight(a.moe, d.moe, a.norm2.data(), g + offset_[kRouter],
                            g + offset_[kExpertsGateUp], g + offset_[kExpertsDown]);
  }

  std::array<const T*, 3> qkv_weights(const T* w) const {
    if (!w) return {nullptr, nullptr, nullptr};
    return {w + offset_[kQ], w + offset_[kK], w + offset_[kV]};
  }

  const TensorParallel<B>& tp_;
  int seq_, B_, C_, Hl_, KVl_, D_, Fl_;
  T eps_;
  nn::RopeTable<T, B> rope_;
  std::array<std::size_t, kMoeBlockParams> offset_{};
  std::optional<MoeMlp<T, B>> moe_;  // an MoE layer's MLP, else gate_up_ and down_
  QkvProjection<T, B> qkv_;
  ColumnParallelLinear<T, B> gate_up_;
  RowParallelLinear<T, B> o_, down_;
};

}  // namespace trident::llama
