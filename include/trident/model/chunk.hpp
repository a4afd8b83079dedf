// trident/model/chunk.hpp: a model chunk — the layers one pipeline rank runs for one virtual
// stage — with its parameters in a ZeRO UnitStore, forward and backward of one microbatch.
//
// The first chunk of the model owns the embedding (vocab-parallel wte + positions), the last
// owns the final LayerNorm and the LM head tied to wte (its own copy of wte when the pipeline
// has more than one stage; the trainer sums the two copies' gradients). What a microbatch's
// backward needs is kept per microbatch until that backward runs; with full recomputation
// (GPipe's re-materialisation) only each block's input is kept and the block's forward is
// replayed before its backward.
#pragma once

#include <map>
#include <vector>

#include "../data/tokens.hpp"
#include "../tp/vocab_parallel.hpp"
#include "../zero/unit_store.hpp"
#include "block.hpp"

namespace trident {

struct ChunkSpec {
  int first_layer = 0, layers = 0;  // blocks [first_layer, first_layer + layers)
  bool embedding = false, head = false;
};

template <class T, class S = T>
class ModelChunk {
 public:
  ModelChunk(const GPTConfig& c, const TensorParallel& tp, ChunkSpec spec, int rows, const Comm& dp,
             ZeroPolicy zero, bool recompute)
      : c_(c),
        tp_(tp),
        spec_(spec),
        B_(rows),
        recompute_(recompute),
        block_(c, tp, rows),
        store_(layouts(c, tp, spec), zero, dp) {
    const ShardLayout wte =
        layout_unit(wte_unit(c, tp.size()), tp.size(), tp.rank()).params[0].layout;
    const int vocab_rows = static_cast<int>(wte.local_rows()),
              begin = static_cast<int>(wte.offset());
    embedding_ = {begin, vocab_rows, c.hidden};
    head_ = {begin, vocab_rows, c.vocab, c.hidden};
    if (spec.embedding) order_ = {store_.find("wte"), store_.find("wpe")};
    for (int l = 0; l < spec.layers; ++l)
      order_.push_back(store_.find("h." + std::to_string(spec.first_layer + l)));
    if (spec.head) order_.insert(order_.end(), {store_.find("ln_f"), store_.find("wte")});
    store_.initialise([&](int u, T* out) { initialise_unit(store_.layout(u), c, out); });
  }

  UnitStore<T, S>& store() { return store_; }
  const ChunkSpec& spec() const { return spec_; }
  // Elements of the activation passed between pipeline stages: (n, C).
  std::size_t activation_size() const { return std::size_t(block_.local_rows()) * c_.hidden; }

  // input: (n, C) from the previous stage (ignored on the first chunk, which embeds data.inputs);
  // output: (n, C) for the next stage (ignored on the last chunk). Returns this microbatch's
  // loss times `scale` (the last chunk; 0 elsewhere).
  double forward(int mb, const Microbatch& data, const T* input, T* output, T scale) {
    Stash& st = stash_[mb];
    const int N = block_.rows(), n = block_.local_rows(), C = c_.hidden;
    std::size_t k = 0;
    st.blocks.resize(spec_.layers);
    for (auto& a : st.blocks) a.x.allocate(MemoryKind::activations, std::size_t(n) * C);
    T* first = spec_.layers ? st.blocks[0].x.data() : nullptr;
    if (spec_.embedding) {
      Buffer<T> partial(MemoryKind::buffers, std::size_t(N) * C);
      const T* wte = use(k++);
      embedding_.forward(tp_, first, partial.data(), data.inputs.data(), wte, use(k++), N, B_);
      release(k - 2), release(k - 1);
    } else {
      std::copy_n(input, activation_size(), first);
    }
    if (spec_.head) st.final_x.allocate(MemoryKind::activations, std::size_t(n) * C);
    for (int l = 0; l < spec_.layers; ++l) {
      T* out = l + 1 < spec_.layers ? st.blocks[l + 1].x.data()
               : spec_.head         ? st.final_x.data()
                                    : output;
      block_.forward(st.blocks[l], out, use(k++));
      release(k - 1);
      if (recompute_) st.blocks[l].drop_all_but_input();
    }
    if (!spec_.head) return 0;
    return head_forward(st, data, k, scale);
  }

  // doutput: (n, C) from the next stage (ignored on the last chunk); dinput: (n, C) for the
  // previous stage (ignored on the first). last: the step's last weight-gradient pass of this
  // chunk (the units' gradients are then complete: their DP reductions start). part: both
  // (fused), or zero-bubble's B (input: writes dinput, keeps what W needs in the stash) and W
  // (weight: the units' gradients from the stash; doutput, dinput unused, no parameters read).
  void backward(int mb, const Microbatch& data, const T* doutput, T* dinput, T scale, bool last,
                nn::BackwardPart part = nn::BackwardPart::both) {
    Stash& st = stash_.at(mb);
    const int N = block_.rows(), n = block_.local_rows(), C = c_.hidden;
    const bool in = nn::computes_input(part), wt = nn::computes_weights(part);
    Buffer<T> d(MemoryKind::buffers, in ? std::size_t(n) * C : 0),
        dnext(MemoryKind::buffers, in ? std::size_t(n) * C : 0);
    std::size_t k = order_.size();  // walk the units in reverse
    if (spec_.head) {
      head_backward(st, data, d.data(), k, scale, last, part);
    } else if (in) {
      std::copy_n(doutput, d.size(), d.data());
    }
    if (part == nn::BackwardPart::input) st.grads.resize(spec_.layers);
    for (int l = spec_.layers - 1; l >= 0; --l) {
      const int u = order_[--k];
      const T* w = in ? use_backward(k) : nullptr;
      if (recompute_ && in) {
        Buffer<T> out(MemoryKind::buffers, std::size_t(n) * C);
        block_.forward(st.blocks[l], out.data(), w);
      }
      T* dx = !in ? nullptr : (l == 0 && !spec_.embedding) ? dinput : dnext.data();
      BlockGradients<T> fused;
      block_.backward(st.blocks[l], dx, d.data(), w, wt ? store_.grads(u) : nullptr,
                      part == nn::BackwardPart::both ? fused : st.grads[l], part);
      if (in) store_.release(u);
      if (part == nn::BackwardPart::input) {
        st.blocks[l].drop_what_weight_gradients_do_not_need();
      } else {
        st.blocks[l] = BlockActivations<T>{};
        if (!st.grads.empty()) st.grads[l] = BlockGradients<T>{};
        store_.commit(u, last);
      }
      store_.poll();
      if (dx == dnext.data() && in) std::swap(d, dnext);
    }
    if (spec_.embedding && part == nn::BackwardPart::input) {  // W needs the output's gradient
      st.dembedding.allocate(MemoryKind::activations, d.size(), Fill::none);
      std::copy_n(d.data(), d.size(), st.dembedding.data());
    } else if (spec_.embedding) {
      const int wte = order_[0], wpe = order_[1];
      Buffer<T> dfull(MemoryKind::buffers, tp_.sequence_parallel ? std::size_t(N) * C : 0);
      embedding_.backward(tp_, store_.grads(wte), store_.grads(wpe),
                          in ? d.data() : st.dembedding.data(), dfull.data(), data.inputs.data(), N,
                          B_);
      store_.commit(wpe, last);
      store_.commit(wte, last);
    }
    if (wt) stash_.erase(mb);
  }

 private:
  struct Stash {
    std::vector<BlockActivations<T>> blocks;
    std::vector<BlockGradients<T>> grads;  // from B to W (zero-bubble schedules)
    Buffer<T> final_x, lnf_mean, lnf_rstd, lnf,
        probs;             // last chunk: LN_f input, stats, head input, softmax (then dlogits)
    Buffer<T> dln_f;       // last chunk: LN_f's output gradient
    Buffer<T> dembedding;  // first chunk, from B to W: the embedding output's gradient
  };

  static std::vector<UnitLayout> layouts(const GPTConfig& c, const TensorParallel& tp,
                                         ChunkSpec s) {
    std::vector<UnitSpec> units;
    if (s.embedding) units.insert(units.end(), {wte_unit(c, tp.size()), wpe_unit(c)});
    for (int l = 0; l < s.layers; ++l) units.push_back(block_unit(c, s.first_layer + l));
    if (s.head) units.push_back(ln_f_unit(c));
    if (s.head && !s.embedding) units.push_back(wte_unit(c, tp.size()));
    std::vector<UnitLayout> out;
    for (const UnitSpec& u : units) out.push_back(layout_unit(u, tp.size(), tp.rank()));
    return out;
  }

  // Parameters of the k-th unit in forward order, prefetching the next one (ZeRO-3).
  const T* use(std::size_t k) {
    if (k + 1 < order_.size()) store_.prefetch(order_[k + 1]);
    return store_.params(order_[k]);
  }
  // In backward order; the embedding's backward needs no parameters, so no prefetch for it.
  const T* use_backward(std::size_t k) {
    if (k > (spec_.embedding ? 2u : 0u)) store_.prefetch(order_[k - 1]);
    return store_.params(order_[k]);
  }
  void release(std::size_t k) { store_.release(order_[k]); }

  double head_forward(Stash& st, const Microbatch& data, std::size_t k, T scale) {
    const int N = block_.rows(), n = block_.local_rows(), C = c_.hidden;
    const T* lnf = use(k);
    const T* wte = use(k + 1);
    auto act = [&](Buffer<T>& b, std::size_t size) {  // overwritten below: not zeroed
      b.allocate(MemoryKind::activations, size, Fill::none);
    };
    act(st.lnf_mean, n), act(st.lnf_rstd, n), act(st.lnf, std::size_t(N) * C);
    act(st.probs, std::size_t(N) * head_.rows);
    Buffer<T> local(MemoryKind::buffers, tp_.sequence_parallel ? std::size_t(n) * C : 0),
        losses(MemoryKind::buffers, N);
    T* out = tp_.sequence_parallel ? local.data() : st.lnf.data();
    nn::layernorm_forward(out, st.lnf_mean.data(), st.lnf_rstd.data(), st.final_x.data(), lnf,
                          lnf + C, n, C);
    head_.forward(tp_, losses.data(), st.probs.data(), out, st.lnf.data(), wte, data.targets.data(),
                  N);
    release(k), release(k + 1);
    double sum = 0;
    for (int i = 0; i < N; ++i) sum += losses[i];
    return sum * scale;
  }

  void head_backward(Stash& st, const Microbatch& data, T* dx, std::size_t& k, T scale, bool last,
                     nn::BackwardPart part) {
    const int N = block_.rows(), n = block_.local_rows(), C = c_.hidden;
    const bool in = nn::computes_input(part), wt = nn::computes_weights(part);
    const int u_wte = order_[--k], u_lnf = order_[--k];
    const T* wte = in ? use_backward(k + 1) : nullptr;
    const T* lnf = in ? use_backward(k) : nullptr;
    Buffer<T> dfull(MemoryKind::buffers, in && tp_.sequence_parallel ? std::size_t(N) * C : 0);
    if (in)
      st.dln_f.allocate(
          part == nn::BackwardPart::both ? MemoryKind::buffers : MemoryKind::activations,
          std::size_t(n) * C);
    T* dln = st.dln_f.data();
    T* g_wte = wt ? store_.grads(u_wte) : nullptr;
    T* g = wt ? store_.grads(u_lnf) : nullptr;
    head_.backward(tp_, dln, tp_.sequence_parallel ? dfull.data() : dln, g_wte, st.probs.data(),
                   data.targets.data(), st.lnf.data(), wte, scale, N, part);
    nn::layernorm_backward(dx, g, g ? g + C : nullptr, dln, st.final_x.data(), lnf,
                           st.lnf_mean.data(), st.lnf_rstd.data(), n, C, part);
    if (in) store_.release(u_wte), store_.release(u_lnf);
    if (!wt) return;
    store_.commit(u_lnf, last);
    if (!spec_.embedding) store_.commit(u_wte, last);
  }

  GPTConfig c_;
  const TensorParallel& tp_;
  ChunkSpec spec_;
  int B_;
  bool recompute_;
  Block<T> block_;
  VocabParallelEmbedding<T> embedding_;
  VocabParallelHead<T> head_;
  UnitStore<T, S> store_;
  std::vector<int> order_;  // units in forward order
  std::map<int, Stash> stash_;
};

}  // namespace trident
