// trident/models/llama/moe_mlp.hpp: the mixture-of-experts MLP half of a Llama block on one
// tensor-parallel rank, forward and backward side by side: a router picks each token's top-k
// of E SwiGLU experts and the token's output is their gate-weighted sum (Shazeer et al. 2017;
// Switch Transformer, Fedus et al. 2021; Mixtral, Jiang et al. 2024).
//
//   probs = softmax(x Wr)        router (C, E), replicated over TP
//   out_t = sum_j gate_tj Expert_{e_tj}(x_t)   dropless: every routed (token, slot) is computed
//   loss += weight * sum_b aux_b  the load-balancing loss per sequence (Switch eq. 4)
//
// Each expert is split over TP as the dense MLP is (Megatron §3): gate/up by columns, down by
// rows, so the experts' output is a partial sum over TP, reduced with the block's g (the
// all-reduce, or SP's reduce-scatter) and the input gradient with its f. The router and the
// loss run on every TP rank on the same (N, C) input (gathered under SP): its input gradient is
// added after f's reduction (once), its weight gradient taken from this rank's rows (all of them
// without SP; its sequence shard under SP, summed over TP with the other replicated parameters:
// tp/sequence_parallel_gradients.hpp). A gate's gradient needs the whole expert output: the
// partial dot products are summed over TP. Each microbatch's expert token counts cross to the
// host once (backend::download), as the GEMMs' sizes.
// Sizes: N = seq batch rows (whole sequences: no CP), C hidden, E experts, k top-k, R = N k
// routed rows, Fl = F_e / t expert columns on this rank.
#pragma once

#include <vector>

#include "../../backend/device_buffer.hpp"
#include "../../nn/experts.hpp"
#include "../../nn/moe_dispatch.hpp"
#include "../../nn/moe_router.hpp"
#include "../../tp/tensor_parallel.hpp"
#include "config.hpp"

namespace trident::llama {

template <class T, class B>
struct MoeActivations {
  using Buf = backend::DeviceBuffer<T, B>;
  using Ids = backend::DeviceBuffer<std::int32_t, B>;
  Buf probs;                 // (N, E) the router's softmax
  Ids choice, position;      // (N, k) chosen experts; where each sits in expert order
  Ids token;                 // (R) the token at each routed row
  Buf gates, fractions;      // (N, k); (batch, E) each sequence's share of choices per expert
  Buf aux;                   // (batch) each sequence's load-balancing loss
  std::vector<int> counts;   // (E) host: routed rows per expert
  Buf xs, gate_up, act, ys;  // (R, C), (R, 2 Fl), (R, Fl), (R, C): the experts' rows

  // What the weight half (W) does not read: the router's outputs, gate/up, the expert outputs.
  void drop_what_weight_gradients_do_not_need() {
    probs.reset();
    choice.reset();
    position.reset();
    token.reset();
    gates.reset();
    fractions.reset();
    gate_up.reset();
    ys.reset();
  }
};

template <class T, class B>
struct MoeGradients {
  using Buf = backend::DeviceBuffer<T, B>;
  Buf d_gate_up, dys;  // (R, 2 Fl), (R, C): the experts' dy, for W
  Buf dlogits;         // (N, E): the router's dy, for W
};

template <class T, class B>
class MoeMlp {
  using Buf = backend::DeviceBuffer<T, B>;

 public:
  using Activations = MoeActivations<T, B>;
  using Gradients = MoeGradients<T, B>;

  MoeMlp(const Config& c, const TensorParallel<B>& tp, int seq, int batch)
      : tp_(tp),
        seq_(seq),
        batch_(batch),
        C_(c.hidden),
        E_(c.experts),
        k_(c.top_k),
        Fl_(c.expert_ffn() / tp.size()),
        alpha_(T(c.aux_loss_coef)) {}

  int rows() const { return seq_ * batch_; }
  int routed_rows() const { return rows() * k_; }

  // x: (N, C) the normed input (gathered under SP); wr: (C, E), w1: (E C, 2 Fl), w2: (E Fl, C)
  // -> partial: (N, C) this rank's share of the output, to be summed over TP (g). Fills a.
  void forward(Activations& a, T* partial, const T* x, const T* wr, const T* w1,
               const T* w2) const {
    const int N = rows(), R = routed_rows();
    route(a, x, wr);
    auto act = [](Buf& b, std::size_t size) {
      b.allocate(MemoryKind::activations, size, Fill::none);
    };
    act(a.xs, std::size_t(R) * C_);
    act(a.gate_up, std::size_t(R) * 2 * Fl_);
    act(a.act, std::size_t(R) * Fl_);
    act(a.ys, std::size_t(R) * C_);
    nn::moe_permute<B>(a.xs.data(), x, a.token.data(), R, C_);
    nn::experts_forward<B>(a.ys.data(), a.gate_up.data(), a.act.data(), a.xs.data(), w1, w2,
                           a.counts.data(), E_, C_, Fl_);
    nn::moe_combine<B>(partial, a.ys.data(), a.gates.data(), a.position.data(), N, k_, C_);
  }

  // Input half: dy: (N, C) the output's gradient (gathered under SP) -> dx_full: (N, C) the
  // experts' share of the input gradient, partial over TP (for f's reduction); keeps d.
  // loss_weight: the load-balancing loss's weight in the loss (1 / the global batch's sequences).
  void backward_input(const Activations& a, Gradients& d, T* dx_full, const T* dy, const T* w1,
                      const T* w2, T loss_weight, MemoryKind kind) const {
    const int N = rows(), R = routed_rows();
    d.d_gate_up.allocate(kind, std::size_t(R) * 2 * Fl_, Fill::none);
    d.dys.allocate(kind, std::size_t(R) * C_, Fill::none);
    d.dlogits.allocate(kind, std::size_t(N) * E_, Fill::none);
    Buf dgates(MemoryKind::buffers, std::size_t(N) * k_, Fill::none),
        dxs(MemoryKind::buffers, std::size_t(R) * C_, Fill::none),
        dprobs(MemoryKind::buffers, std::size_t(N) * E_, Fill::none);
    nn::moe_combine_backward<B>(d.dys.data(), dgates.data(), dy, a.ys.data(), a.gates.data(),
                                a.position.data(), N, k_, C_);
    tp_.all_reduce(dgates.data(), dgates.size());  // <dy, expert output>: its TP partial sums
    nn::experts_backward<B>(dxs.data(), static_cast<T*>(nullptr), static_cast<T*>(nullptr),
                            d.d_gate_up.data(), d.dys.data(), a.xs.data(), a.gate_up.data(),
                            a.act.data(), w1, w2, a.counts.data(), E_, C_, Fl_,
                            nn::BackwardPart::input);
    nn::moe_unpermute<B>(dx_full, dxs.data(), a.position.data(), N, k_, C_, false);
    nn::router_gates_backward<B>(dprobs.data(), dgates.data(), a.probs.data(), a.choice.data(),
                                 a.gates.data(), N, E_, k_);
    nn::load_balancing_backward<B>(dprobs.data(), a.fractions.data(), seq_, batch_, E_, alpha_,
                                   loss_weight);
    nn::router_softmax_backward<B>(d.dlogits.data(), dprobs.data(), a.probs.data(), N, E_);
  }

  // The load-balancing loss of the microbatch's sequences, summed, times `weight` (one crossing).
  double loss_term(const Activations& a, double weight) const {
    std::vector<T> host(a.aux.size());
    backend::download<B>(host.data(), a.aux.data(), host.size());
    double sum = 0;
    for (T v : host) sum += double(v);
    return sum * weight;
  }

  // After f's reduction: dx: (n, C) += the router's input gradient, this rank's rows.
  void add_router_input_gradient(T* dx, const Gradients& d, const T* wr) const {
    const int n = tp_.local_rows(rows()), first = tp_.sequence_parallel ? tp_.rank() * n : 0;
    B::gemm(false, true, n, C_, E_, d.dlogits.data() + std::ptrdiff_t(first) * E_, E_, wr, E_, T(1),
            dx, C_);
  }

  // Weight half: gr: (C, E), g1: (E C, 2 Fl), g2: (E Fl, C) accumulate from a, d and x: (N, C)
  // the normed input the router saw.
  void backward_weight(const Activations& a, Gradients& d, const T* x, T* gr, T* g1, T* g2) const {
    nn::experts_backward<B>(static_cast<T*>(nullptr), g1, g2, d.d_gate_up.data(), d.dys.data(),
                            a.xs.data(), static_cast<const T*>(nullptr), a.act.data(),
                            static_cast<const T*>(nullptr), static_cast<const T*>(nullptr),
                            a.counts.data(), E_, C_, Fl_, nn::BackwardPart::weight);
    const int n = tp_.local_rows(rows()), first = tp_.sequence_parallel ? tp_.rank() * n : 0;
    B::gemm(true, false, C_, E_, n, x + std::ptrdiff_t(first) * C_, C_,
            d.dlogits.data() + std::ptrdiff_t(first) * E_, E_, T(1), gr, E_);
  }

 private:
  // The router: probabilities, each token's experts and gates, the load-balancing loss, the
  // routed order and its counts (down to the host).
  void route(Activations& a, const T* x, const T* wr) const {
    const int N = rows(), R = routed_rows();
    auto act = [](auto& b, std::size_t size) {
      b.allocate(MemoryKind::activations, size, Fill::none);
    };
    act(a.probs, std::size_t(N) * E_);
    act(a.choice, std::size_t(N) * k_);
    act(a.position, std::size_t(N) * k_);
    act(a.token, std::size_t(R));
    act(a.gates, std::size_t(N) * k_);
    act(a.fractions, std::size_t(batch_) * E_);
    act(a.aux, std::size_t(batch_));
    Buf logits(MemoryKind::buffers, std::size_t(N) * E_, Fill::none);
    B::gemm(false, false, N, E_, C_, x, C_, wr, E_, T(0), logits.data(), E_);
    nn::router_forward<B>(a.probs.data(), a.choice.data(), a.gates.data(), logits.data(), N, E_,
                          k_);
    nn::load_balancing_forward<B>(a.aux.data(), a.fractions.data(), a.probs.data(), a.choice.data(),
                                  seq_, batch_, E_, k_, alpha_);
    backend::DeviceBuffer<std::int32_t, B> counts(MemoryKind::buffers, std::size_t(E_), Fill::none);
    nn::moe_route<B>(counts.data(), a.position.data(), a.token.data(), a.choice.data(), N, E_, k_);
    std::vector<std::int32_t> host(E_);
    backend::download<B>(host.data(), counts.data(), host.size());
    a.counts.assign(host.begin(), host.end());
  }

  const TensorParallel<B>& tp_;
  int seq_, batch_, C_, E_, k_, Fl_;
  T alpha_;
};

}  // namespace trident::llama
