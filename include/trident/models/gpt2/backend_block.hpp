// trident/models/gpt2/backend_block.hpp: one GPT-2 decoder block written against a backend type
// B (backend/cpu/cpu.hpp, backend/cuda/cuda.cuh), forward and backward side by side.
//
//   x2  = x  + Proj(Attention(QKV(LN1(x))))       attention half
//   out = x2 + MlpProj(GELU(FC(LN2(x2))))         MLP half
//
// The math of models/gpt2/block.hpp, composed of backend/kernels/ (each kernel body written
// once, run by B::for_each) and GEMMs through B::gemm; every pointer (x, out, the unit's
// parameters w and gradients g) and every activation is in B's memory. QKV and FC are
// column-parallel, the projections row-parallel (Megatron-LM §3): one TP all-reduce per half in
// forward (g) and one in backward (f), through BackendTp<B> (tp/backend_group.hpp); no sequence
// parallelism, and the fused backward only (no zero-bubble B/W split). Sizes: seq tokens per
// sequence, Bs sequences, N = seq*Bs rows, C hidden, Cl = C/t, Hl = H/t heads of D = C/H on
// this rank of t.
#pragma once

#include <array>

#include "../../backend/device_buffer.hpp"
#include "../../backend/kernels/attention.hpp"
#include "../../backend/kernels/gelu.hpp"
#include "../../backend/kernels/layernorm.hpp"
#include "../../backend/kernels/linear.hpp"
#include "../../nn/backward_part.hpp"
#include "../../nn/block_halves.hpp"
#include "../../tp/backend_group.hpp"
#include "params.hpp"

namespace trident::gpt2 {

// What a block's backward needs from its forward (kept per microbatch), in B's memory.
template <class T, class B>
struct BackendBlockActivations {
  using Buf = backend::DeviceBuffer<T, B>;
  Buf x;                   // (N, C) input: the residual stream
  Buf ln1_mean, ln1_rstd;  // (N)
  Buf ln1;                 // (N, C)
  Buf qkv;                 // (N, 3 Cl)
  Buf probs;               // (Bs, Hl, seq, seq)
  Buf att;                 // (N, Cl)
  Buf x2;                  // (N, C) residual after attention
  Buf ln2_mean, ln2_rstd;  // (N)
  Buf ln2;                 // (N, C)
  Buf fc, act;             // (N, 4 Cl) before and after GELU

  // The B/W split is not supported here (BackendBlock::backward refuses it); kept for the
  // interface of model/decoder_stage.hpp.
  void drop_what_weight_gradients_do_not_need() {}
};

// Nothing crosses from B to W: the backward is fused.
struct BackendBlockGradients {};

// The decoder block of model/decoder_stage.hpp's interface, on backend B.
template <class T, class B>
class BackendBlock {
  using Buf = backend::DeviceBuffer<T, B>;

 public:
  using Activations = BackendBlockActivations<T, B>;
  using Gradients = BackendBlockGradients;

  BackendBlock(const Config& c, const TensorParallel& tp, int rows)
      : BackendBlock(c, rows, BackendTp<B>(tp)) {}
  BackendBlock(const Config& c, int rows, BackendTp<B> tp = {})
      : tp_(std::move(tp)),
        seq_(c.seq),
        B_(rows),
        C_(c.hidden),
        Cl_(c.hidden / tp_.size()),
        Hl_(c.heads / tp_.size()),
        D_(c.head_size()) {
    const UnitLayout layout = layout_unit(block_unit(c, 0), tp_.size(), tp_.rank());
    for (int k = 0; k < kBlockParams; ++k) offset_[k] = layout.params[k].offset;
  }

  int rows() const { return seq_ * B_; }
  // Elements of the residual stream a block takes and gives: (N, C).
  std::size_t activation_size() const { return std::size_t(rows()) * C_; }

  // a.x holds the input; fills a; writes the block's output to out (N, C). w: the unit's params.
  // halves must be both: this block runs whole (its model's stage_costs says so to the split).
  void forward(Activations& a, T* out, const T* w,
               nn::BlockHalves halves = nn::BlockHalves::both) const {
    require(halves == nn::BlockHalves::both, kWhole);
    namespace k = backend::kernels;
    const int N = rows(), C = C_, Cl = Cl_;
    const std::size_t NC = std::size_t(N) * C, NCl = std::size_t(N) * Cl;
    auto act = [](Buf& b, std::size_t size) {  // each overwritten whole below
      b.allocate(MemoryKind::activations, size, Fill::none);
    };
    act(a.ln1_mean, N), act(a.ln1_rstd, N), act(a.ln1, NC), act(a.qkv, 3 * NCl);
    act(a.probs, std::size_t(B_) * Hl_ * seq_ * seq_), act(a.att, NCl), act(a.x2, NC);
    act(a.ln2_mean, N), act(a.ln2_rstd, N), act(a.ln2, NC), act(a.fc, 4 * NCl);
    act(a.act, 4 * NCl);
    Buf y(MemoryKind::buffers, NC, Fill::none);  // a projection's output
    auto W = [&](int p) { return w + offset_[p]; };

    // attention half
    k::layernorm_forward<B>(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), a.x.data(),
                            W(kLn1W), W(kLn1B), N, C);
    k::linear_forward<B>(a.qkv.data(), a.ln1.data(), W(kQkvW), W(kQkvB), N, C, 3 * Cl);
    k::attention_forward<B>(a.att.data(), a.probs.data(), a.qkv.data(), B_, seq_, Hl_, Hl_, D_);
    row_parallel_forward(y.data(), a.att.data(), W(kAttnProjW), W(kAttnProjB), Cl);
    k::residual_sum<B>(a.x2.data(), a.x.data(), y.data(), N, C);
    // MLP half
    k::layernorm_forward<B>(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.x2.data(),
                            W(kLn2W), W(kLn2B), N, C);
    k::linear_forward<B>(a.fc.data(), a.ln2.data(), W(kFcW), W(kFcB), N, C, 4 * Cl);
    k::gelu_forward<B>(a.act.data(), a.fc.data(), int(4 * NCl));
    row_parallel_forward(y.data(), a.act.data(), W(kMlpProjW), W(kMlpProjB), 4 * Cl);
    k::residual_sum<B>(out, a.x2.data(), y.data(), N, C);
  }

  // dout: (N, C) gradient of the output; dx: (N, C) gradient of the input (overwritten).
  // g: the unit's gradients (accumulate). part must be both (fused).
  void backward(const Activations& a, T* dx, const T* dout, const T* w, T* g, Gradients&,
                nn::BackwardPart part, nn::BlockHalves halves = nn::BlockHalves::both) const {
    require(halves == nn::BlockHalves::both, kWhole);
    require(part == nn::BackwardPart::both,
            "the backend GPT-2 block runs the fused backward only (no zero-bubble schedule)");
    backward(a, dx, dout, w, g);
  }
  void backward(const Activations& a, T* dx, const T* dout, const T* w, T* g) const {
    namespace k = backend::kernels;
    const int N = rows(), C = C_, Cl = Cl_;
    const std::size_t NC = std::size_t(N) * C, NCl = std::size_t(N) * Cl;
    Buf d_fc(MemoryKind::buffers, 4 * NCl, Fill::none),
        d_qkv(MemoryKind::buffers, 3 * NCl, Fill::none), dln(MemoryKind::buffers, NC, Fill::none),
        dnorm(MemoryKind::buffers, NC, Fill::none), dx2(MemoryKind::buffers, NC, Fill::none),
        d_att(MemoryKind::buffers, NCl, Fill::none);
    auto W = [&](int p) { return w + offset_[p]; };
    auto G = [&](int p) { return g + offset_[p]; };

    // MLP half: out = x2 + MlpProj(GELU(FC(LN2(x2))))
    k::linear_backward<B>(d_fc.data(), G(kMlpProjW), G(kMlpProjB), dout, a.act.data(), W(kMlpProjW),
                          N, 4 * Cl, C);
    k::gelu_backward<B>(d_fc.data(), d_fc.data(), a.fc.data(), int(4 * NCl));
    k::linear_backward<B>(dln.data(), G(kFcW), G(kFcB), d_fc.data(), a.ln2.data(), W(kFcW), N, C,
                          4 * Cl);
    tp_.all_reduce(dln.data(), NC);  // f, backward
    k::layernorm_backward<B>(dnorm.data(), G(kLn2W), G(kLn2B), dln.data(), a.x2.data(), W(kLn2W),
                             a.ln2_mean.data(), a.ln2_rstd.data(), N, C);
    k::residual_sum<B>(dx2.data(), dout, dnorm.data(), N, C);
    // attention half: x2 = x + Proj(Attention(QKV(LN1(x))))
    k::linear_backward<B>(d_att.data(), G(kAttnProjW), G(kAttnProjB), dx2.data(), a.att.data(),
                          W(kAttnProjW), N, Cl, C);
    k::attention_backward<B>(d_qkv.data(), d_att.data(), a.qkv.data(), a.probs.data(), B_, seq_,
                             Hl_, Hl_, D_);
    k::linear_backward<B>(dln.data(), G(kQkvW), G(kQkvB), d_qkv.data(), a.ln1.data(), W(kQkvW), N,
                          C, 3 * Cl);
    tp_.all_reduce(dln.data(), NC);  // f, backward
    k::layernorm_backward<B>(dnorm.data(), G(kLn1W), G(kLn1B), dln.data(), a.x.data(), W(kLn1W),
                             a.ln1_mean.data(), a.ln1_rstd.data(), N, C);
    k::residual_sum<B>(dx, dx2.data(), dnorm.data(), N, C);
  }

 private:
  static constexpr const char* kWhole =
      "the backend GPT-2 block runs whole: no pipeline stage boundary inside it";
  // A row-parallel product: y (N, C) = g(x_r W_r) + b, x_r: (N, in) this rank's input features.
  void row_parallel_forward(T* y, const T* x, const T* w, const T* b, int in) const {
    const int N = rows();
    backend::kernels::linear_forward<B>(y, x, w, static_cast<const T*>(nullptr), N, in, C_);
    tp_.all_reduce(y, std::size_t(N) * C_);  // g, forward
    backend::kernels::bias_add<B>(y, b, N, C_);
  }

  BackendTp<B> tp_;
  int seq_, B_, C_, Cl_, Hl_, D_;
  std::array<std::size_t, kBlockParams> offset_{};
};

}  // namespace trident::gpt2
