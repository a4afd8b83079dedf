// trident/models/gpt2/block.hpp: one GPT-2 decoder block on one tensor-parallel rank, forward and
// backward side by side.
//
//   x2  = x  + RowParallel(Attention(ColumnParallel(LN1(x))))      attention half
//   out = x2 + RowParallel(GELU(ColumnParallel(LN2(x2))))          MLP half
//
// Either half may run alone (nn/block_halves.hpp: a pipeline stage boundary between them).
// QKV and FC are column-parallel, the projections row-parallel (Megatron-LM §3): one TP
// all-reduce per half in forward and one in backward; with sequence parallelism an all-gather
// and a reduce-scatter instead, and x, x2 are this rank's sequence shard.
// Every buffer is in backend B's memory and every kernel launched through B (nn/, tp/).
// Under context parallelism (cp/) seq is this rank's tokens of each sequence (tp.local_seq) and
// attention runs over the CP ring (cp/ring_attention.hpp); everything else is local.
// Sizes: seq tokens per sequence, batch sequences, N = seq*batch rows, n = tp.local_rows(N) rows
// in the LayerNorm/residual regions, C hidden, Cl = C/t, Hl = H/t heads of D = C/H on this rank.
#pragma once

#include <algorithm>
#include <array>

#include "../../backend/device_buffer.hpp"
#include "../../cp/attention.hpp"
#include "../../nn/attention.hpp"
#include "../../nn/block_halves.hpp"
#include "../../nn/gelu.hpp"
#include "../../nn/layernorm.hpp"
#include "../../nn/residual.hpp"
#include "../../tp/linear.hpp"
#include "params.hpp"

namespace trident::gpt2 {

// What a block's backward needs from its forward (kept per microbatch).
template <class T, class B>
struct BlockActivations {
  using Buf = backend::DeviceBuffer<T, B>;
  Buf x;                   // (n, C) input: the residual stream
  Buf ln1_mean, ln1_rstd;  // (n)
  Buf ln1;                 // (N, C) LN1 output as QKV saw it (gathered under SP)
  Buf qkv;                 // (N, 3 Cl)
  Buf probs;               // (batch, Hl, seq, cp seq)
  Buf att;                 // (N, Cl)
  Buf x2;                  // (n, C) residual after attention
  Buf ln2_mean, ln2_rstd;  // (n)
  Buf ln2;                 // (N, C)
  Buf fc, act;             // (N, 4 Cl) before and after GELU

  // After the input half of the backward (B), which also took the LayerNorms' gradients (cheap,
  // O(n C)): frees all but the four linear layers' inputs (ln1, att, ln2, act), which the weight
  // half (W) reads.
  void drop_what_weight_gradients_do_not_need() {
    for (Buf* b : {&x, &ln1_mean, &ln1_rstd, &qkv, &probs, &x2, &ln2_mean, &ln2_rstd, &fc})
      b->reset();
  }
  // Selective recomputation (Korthikanti et al. 2022 §5; model/decoder_stage.hpp): after the
  // forward, frees the attention core's probabilities; the backward recomputes them from qkv.
  void drop_attention_core() { probs.reset(); }
};

// The gradients of a block's layer outputs: written by the input half of the backward (B), read
// by the weight half (W) together with the layers' inputs in BlockActivations (Qi et al. 2023).
// Kept from B to W: the four linear layers' dy (dout, d_fc, dx2, d_qkv; under SP also the
// projections' gathered dy), 9 C per row for C hidden without TP.
template <class T, class B>
struct BlockGradients {
  using Buf = backend::DeviceBuffer<T, B>;
  Buf dout;             // (n, C) the block's output gradient: the MLP projection's dy
  Buf dy_mlp, dy_attn;  // (N, C) under SP: the projections' dy gathered
  Buf d_fc;             // (N, 4 Cl) FC's dy (after GELU's backward)
  Buf dx2;              // (n, C) the attention projection's dy
  Buf d_qkv;            // (N, 3 Cl) QKV's dy
};

// The decoder block of model/decoder_stage.hpp's interface, on backend B.
template <class T, class B>
class Block {
  using Buf = backend::DeviceBuffer<T, B>;

 public:
  using Activations = BlockActivations<T, B>;
  using Gradients = BlockGradients<T, B>;

  Block(const Config& c, const TensorParallel<B>& tp, int batch)
      : tp_(tp),
        seq_(tp.local_seq(c.seq)),
        B_(batch),
        C_(c.hidden),
        Cl_(c.hidden / tp.size()),
        Hl_(c.heads / tp.size()),
        D_(c.head_size()) {
    const UnitLayout layout = layout_unit(block_unit(c, 0), tp.size(), tp.rank());
    for (int k = 0; k < kBlockParams; ++k) offset_[k] = layout.params[k].offset;
    qkv_ = {C_, 3 * Cl_};
    proj_ = {Cl_, C_};
    fc_ = {C_, 4 * Cl_};
    mlp_proj_ = {4 * Cl_, C_};
  }

  int rows() const { return seq_ * B_; }
  int local_rows() const { return tp_.local_rows(rows()); }
  // Elements of the keys and values of this rank's tokens: what the CP ring passes per step.
  std::size_t ring_block_size() const { return std::size_t(rows()) * 2 * Cl_; }
  // Elements of the residual stream a block takes and gives: (n, C).
  std::size_t activation_size() const { return std::size_t(local_rows()) * C_; }

  // a.x holds the input; fills a; writes the block's output to out (n, C). w: the unit's params.
  // halves (nn/block_halves.hpp): attention only writes x2 to out; mlp only takes x2 in a.x.
  void forward(Activations& a, T* out, const T* w,
               nn::BlockHalves halves = nn::BlockHalves::both) const {
    const int N = rows(), n = local_rows();
    const bool attention = nn::runs_attention(halves), mlp = nn::runs_mlp(halves);
    // every kernel below overwrites its whole output: no need to zero it first
    auto act = [&](Buf& b, std::size_t size) {
      b.allocate(MemoryKind::activations, size, Fill::none);
    };
    if (attention) {
      act(a.ln1_mean, n), act(a.ln1_rstd, n), act(a.ln1, N * C_), act(a.qkv, N * 3 * Cl_);
      act(a.probs, std::size_t(B_) * Hl_ * seq_ * seq_ * tp_.cp.size()), act(a.att, N * Cl_);
    }
    if (mlp) {
      if (attention) act(a.x2, n * C_);
      act(a.ln2_mean, n), act(a.ln2_rstd, n), act(a.ln2, N * C_), act(a.fc, N * 4 * Cl_);
      act(a.act, N * 4 * Cl_);
    }
    const bool sp = tp_.sequence_parallel;
    Buf ln_local(MemoryKind::buffers, sp ? n * C_ : 0, Fill::none);
    // the projections' output; without SP their partial sums are reduced in place
    Buf y(MemoryKind::buffers, n * C_, Fill::none),
        y_partial(MemoryKind::buffers, sp ? N * C_ : 0, Fill::none);
    T* partial = sp ? y_partial.data() : y.data();
    T* ln_out1 = sp ? ln_local.data() : a.ln1.data();
    T* ln_out2 = sp ? ln_local.data() : a.ln2.data();
    const T* x2 = attention ? a.x2.data() : a.x.data();

    if (attention) {
      nn::layernorm_forward<B>(ln_out1, a.ln1_mean.data(), a.ln1_rstd.data(), a.x.data(),
                               w + offset_[kLn1W], w + offset_[kLn1B], n, C_);
      qkv_.forward(tp_, a.qkv.data(), ln_out1, a.ln1.data(), w + offset_[kQkvW], w + offset_[kQkvB],
                   N);
      attention_forward(tp_.cp, a.att.data(), a.probs.data(), a.qkv.data(), B_, seq_, Hl_, Hl_, D_);
      proj_.forward(tp_, y.data(), partial, a.att.data(), w + offset_[kAttnProjW], nullptr, N);
    }
    if (attention && mlp)  // x2 = x + (y + proj bias) and LN2(x2) in one pass (nn/residual.hpp)
      nn::residual_layernorm_forward<B>(a.x2.data(), ln_out2, a.ln2_mean.data(), a.ln2_rstd.data(),
                                        a.x.data(), y.data(), w + offset_[kAttnProjB],
                                        w + offset_[kLn2W], w + offset_[kLn2B], n, C_);
    else if (attention)  // the stage ends here: x2 is its output
      nn::residual_forward<B>(out, a.x.data(), y.data(), w + offset_[kAttnProjB], n, C_);
    else
      nn::layernorm_forward<B>(ln_out2, a.ln2_mean.data(), a.ln2_rstd.data(), x2,
                               w + offset_[kLn2W], w + offset_[kLn2B], n, C_);
    if (!mlp) return;
    fc_.forward(tp_, a.fc.data(), ln_out2, a.ln2.data(), w + offset_[kFcW], w + offset_[kFcB], N);
    nn::gelu_forward<B>(a.act.data(), a.fc.data(), a.fc.size());
    mlp_proj_.forward(tp_, y.data(), partial, a.act.data(), w + offset_[kMlpProjW], nullptr, N);
    nn::residual_forward<B>(out, x2, y.data(), w + offset_[kMlpProjB], n, C_);
  }

  // dout: (n, C) gradient of the output; dx: (n, C) gradient of the input (overwritten).
  // g: the unit's gradient buffer (accumulates). The fused backward, both halves at once.
  void backward(const Activations& a, T* dx, const T* dout, const T* w, T* g) const {
    Gradients d;
    backward(a, dx, dout, w, g, d, nn::BackwardPart::both);
  }

  // One half, or both, of the backward (nn/backward_part.hpp). input: writes dx, accumulates the
  // LayerNorms' gradients into g and fills d; weight: accumulates the linear layers' gradients
  // into g from a and d (dx, dout, w unused). halves as in forward: attention only takes x2's
  // gradient as dout, mlp only writes x2's as dx.
  void backward(const Activations& a, T* dx, const T* dout, const T* w, T* g, Gradients& d,
                nn::BackwardPart part, nn::BlockHalves halves = nn::BlockHalves::both) const {
    const int N = rows(), n = local_rows();
    const bool sp = tp_.sequence_parallel, in = nn::computes_input(part);
    const bool fused = part == nn::BackwardPart::both;
    const bool attention = nn::runs_attention(halves), mlp = nn::runs_mlp(halves);
    if (in) {  // kept until W (activations) when W runs later, scratch when fused
      const MemoryKind kind = fused ? MemoryKind::buffers : MemoryKind::activations;
      auto keep = [&](Buf& b, std::size_t size) { b.allocate(kind, size, Fill::none); };
      keep(d.dy_mlp, sp && (mlp || fused) ? N * C_ : 0);
      keep(d.dy_attn, sp && !fused && attention ? N * C_ : 0);
      keep(d.d_fc, mlp ? N * 4 * Cl_ : 0), keep(d.dx2, mlp && attention ? n * C_ : 0);
      keep(d.d_qkv, attention ? N * 3 * Cl_ : 0);
      if (part == nn::BackwardPart::input)
        keep(d.dout, n * C_), B::copy(d.dout.data(), dout, n * C_ * sizeof(T));
    }
    const T* dy = part == nn::BackwardPart::weight ? d.dout.data() : dout;
    // fused: the attention half reuses the MLP half's gathered dy, done with by then
    T* dy_attn = fused ? d.dy_mlp.data() : d.dy_attn.data();
    // all overwritten before they are read
    Buf d_att(MemoryKind::buffers, in && attention ? N * Cl_ : 0, Fill::none),
        dln_full(MemoryKind::buffers, in && sp ? N * C_ : 0, Fill::none),
        dln(MemoryKind::buffers, in ? n * C_ : 0, Fill::none);  // LN2's, then LN1's dy
    auto W = [&](int k) { return w ? w + offset_[k] : nullptr; };
    auto G = [&](int k) { return g ? g + offset_[k] : nullptr; };

    if (mlp) {  // MLP half: out = x2 + proj(gelu(fc(ln2(x2))))
      mlp_proj_.backward(tp_, d.d_fc.data(), G(kMlpProjW), G(kMlpProjB), dy, d.dy_mlp.data(),
                         a.act.data(), W(kMlpProjW), N, part);
      if (in) nn::gelu_backward<B>(d.d_fc.data(), d.d_fc.data(), a.fc.data(), d.d_fc.size());
      fc_.backward(tp_, dln.data(), sp ? dln_full.data() : dln.data(), G(kFcW), G(kFcB),
                   d.d_fc.data(), a.ln2.data(), W(kFcW), N, part);
      if (in)  // the LayerNorms' both halves in B (W has nothing left of them to do), and the
               // residual's gradient: dx2 = dy + LN2's input gradient, in one pass
        nn::layernorm_backward<B>(attention ? d.dx2.data() : dx, G(kLn2W), G(kLn2B), dln.data(),
                                  attention ? a.x2.data() : a.x.data(), W(kLn2W), a.ln2_mean.data(),
                                  a.ln2_rstd.data(), n, C_, nn::BackwardPart::both, dy);
    }
    if (!attention) return;
    // attention half: x2 = x + proj(attention(qkv(ln1(x))))
    const T* dx2 = mlp ? d.dx2.data() : dy;
    proj_.backward(tp_, d_att.data(), G(kAttnProjW), G(kAttnProjB), dx2, dy_attn, a.att.data(),
                   W(kAttnProjW), N, part);
    if (in) {  // the probabilities kept, or recomputed from qkv (selective recomputation)
      Buf recomputed;
      const T* probs = attention_probabilities(tp_.cp, recomputed, a.probs, a.qkv.data(), B_, seq_,
                                               Hl_, Hl_, D_);
      attention_backward(tp_.cp, d.d_qkv.data(), d_att.data(), a.qkv.data(), a.att.data(), probs,
                         B_, seq_, Hl_, Hl_, D_);
    }
    qkv_.backward(tp_, dln.data(), sp ? dln_full.data() : dln.data(), G(kQkvW), G(kQkvB),
                  d.d_qkv.data(), a.ln1.data(), W(kQkvW), N, part);
    if (in)  // dx = dx2 + LN1's input gradient
      nn::layernorm_backward<B>(dx, G(kLn1W), G(kLn1B), dln.data(), a.x.data(), W(kLn1W),
                                a.ln1_mean.data(), a.ln1_rstd.data(), n, C_, nn::BackwardPart::both,
                                dx2);
  }

 private:
  const TensorParallel<B>& tp_;
  int seq_, B_, C_, Cl_, Hl_, D_;
  std::array<std::size_t, kBlockParams> offset_{};
  ColumnParallelLinear<T, B> qkv_, fc_;
  RowParallelLinear<T, B> proj_, mlp_proj_;
};

}  // namespace trident::gpt2
