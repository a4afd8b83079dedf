// trident/model/decoder_stage.hpp: one virtual stage of a decoder-only transformer — the layers
// one pipeline rank runs for it — with its parameters in a ZeRO UnitStore, forward and backward
// of one microbatch, on a backend B. Generic over the model's parts; it is the Stage of
// model/model.hpp for any model that supplies (M: the model, C = model.config()):
//
//   std::vector<UnitSpec> embedding_units(int tp) const;  // units the embedding reads, in order
//   UnitSpec layer_unit(int layer) const;                 // one unit per layer
//   std::vector<UnitSpec> head_units(int tp) const;       // units the head reads, in order
//   template <class T, class B> using Embedding = ...;  // Embedding(C, tp, rows);
//       forward(T* x, const std::int32_t* tokens, const T* const* w);
//       backward(T* const* g, const T* dx, const std::int32_t* tokens)   (reads no parameters)
//   template <class T, class B> using Block = ...;      // Block(C, tp, rows); types Activations
//       (with a DeviceBuffer<T, B> x: the input; drop_what_weight_gradients_do_not_need())
//       and Gradients; activation_size(); forward(Activations&, T* out, const T* w, halves);
//       backward(const Activations&, T* dx, const T* dout, const T* w, T* g, Gradients&, part,
//       halves) (part input may also accumulate cheap gradients, e.g. the norms', into g;
//       halves, nn/block_halves.hpp: the stage's first or last layer may run one half only).
//       Optional: Block(C, tp, rows, layer), one block per layer (layers that differ: a
//       mixture of experts every n-th); kAddsToLoss = true: the backward takes the loss's scale
//       last (a term the block adds to the loss: MoE's load-balancing loss), and
//       loss_term(const Activations&, T scale) (that term, after a forward, in the loss's units)
//       and expert_tokens(const Activations&) (tokens routed to each expert; empty: none) give
//       the step's figures (take_layer_figures); Activations::drop_attention_core(), needed
//       for --recompute selective (refused without it): frees what selective recomputation
//       recomputes (the attention core's probabilities), the backward recomputing what is absent
//   template <class T, class B> using Head = ...;       // Head(C, tp, rows); type Activations;
//       forward(Activations&, T* losses, const T* x, const std::int32_t* targets,
//               const T* const* w)   (losses: (N), each token's loss)
//       backward(Activations&, T* dx, const T* x, const std::int32_t* targets,
//                const T* const* w, T* const* g, T scale, nn::BackwardPart)
//       and, for sampling only (forward_logits): logits(const T* x, int position,
//       const T* const* w, T* out): out (vocab, host memory) the next-token logits after token
//       `position` of row 0 of x, the same on every TP rank
// with tp a TensorParallel<B>. Every pointer a part gets is in B's memory; the stage uploads a
// microbatch's token ids once (inputs on the first stage, targets on the last) and brings its
// tokens' losses back once (backend::upload, download: counted crossings).
//
// The first virtual stage runs the embedding, the last the head and the loss. A head unit named
// like an embedding unit of the same stage is that unit (a tie inside one stage: GPT-2's LM
// head and wte at PP = 1): stored once, its gradient reduction launched after the embedding's
// backward. What a microbatch's backward needs is kept per microbatch until that backward runs;
// with full recomputation (GPipe's re-materialisation) only each block's input is kept and the
// block's forward is replayed before its backward; with selective recomputation (Korthikanti et
// al. 2022 §5) everything but the attention core's probabilities, which the block's backward
// recomputes from the kept q, k, v.
#pragma once

#include <algorithm>
#include <map>
#include <type_traits>
#include <utility>
#include <vector>

#include "../backend/cpu/cpu.hpp"
#include "../backend/device_buffer.hpp"
#include "../data/tokens.hpp"
#include "../nn/backward_part.hpp"
#include "../plan/recompute.hpp"
#include "../tp/tensor_parallel.hpp"
#include "../zero/unit_store.hpp"
#include "model.hpp"
#include "stage_contract.hpp"
#include "stage_params.hpp"

namespace trident {

// A decoder stage's units: the store's list, and which of them each part reads, in order.
struct DecoderUnits {
  std::vector<UnitSpec> units;
  std::vector<int> embedding, layers, head;
};

template <class M>
DecoderUnits decoder_units(const M& model, const StageSpec& s, int tp) {
  DecoderUnits d;
  auto add = [&](const UnitSpec& u) {
    d.units.push_back(u);
    return static_cast<int>(d.units.size()) - 1;
  };
  if (s.first())
    for (const UnitSpec& u : model.embedding_units(tp)) d.embedding.push_back(add(u));
  for (int l = 0; l < s.layers; ++l) d.layers.push_back(add(model.layer_unit(s.first_layer + l)));
  if (s.last())
    for (const UnitSpec& u : model.head_units(tp)) {
      int shared = -1;
      for (int e : d.embedding)
        if (d.units[e].name == u.name) shared = e;
      d.head.push_back(shared >= 0 ? shared : add(u));
    }
  return d;
}

// A block that adds a term of its own to the loss (decoder stage contract above).
template <class Block, class = void>
struct adds_to_loss : std::false_type {};
template <class Block>
struct adds_to_loss<Block, std::void_t<decltype(Block::kAddsToLoss)>>
    : std::bool_constant<Block::kAddsToLoss> {};

// The block of one layer: Block(C, tp, rows, layer) when the model's blocks differ by layer,
// else Block(C, tp, rows) (the contract above).
template <class Block, class Config, class TP>
Block block_of_layer(const Config& c, const TP& tp, int rows, int layer) {
  if constexpr (std::is_constructible_v<Block, const Config&, const TP&, int, int>)
    return Block(c, tp, rows, layer);
  else
    return Block(c, tp, rows);
}

// What a stage's blocks added to a step (blocks with kAddsToLoss): their loss terms, in the
// loss's units (MoE's load-balancing loss), and the tokens routed to each expert, per layer.
struct LayerFigures {
  double loss_terms = 0;
  std::map<int, std::vector<double>> expert_tokens;  // layer -> (E), summed over microbatches
};

// Full recomputation (GPipe's re-materialisation) keeps only a block's input x.
template <class Activations>
void keep_only_input(Activations& a) {
  auto input = std::move(a.x);
  a = Activations{};
  a.x = std::move(input);
}

// Selective recomputation (Korthikanti et al. 2022 §5) keeps all but what a block's
// Activations::drop_attention_core() frees; a block without it cannot run selective.
template <class Activations, class = void>
struct drops_attention_core : std::false_type {};
template <class Activations>
struct drops_attention_core<
    Activations, std::void_t<decltype(std::declval<Activations&>().drop_attention_core())>>
    : std::true_type {};

template <class M, class T, class S = T, class B = backend::Cpu>
class DecoderStage {
  using Embedding = typename M::template Embedding<T, B>;
  using Block = typename M::template Block<T, B>;
  using Head = typename M::template Head<T, B>;
  using Buf = backend::DeviceBuffer<T, B>;
  using Ids = backend::DeviceBuffer<std::int32_t, B>;

 public:
  DecoderStage(const M& model, const TensorParallel<B>& tp, const StageSpec& spec, int rows,
               const backend::DeviceComm<B>& dp, ZeroPolicy zero, Recompute recompute)
      : spec_(spec),
        recompute_(recompute),
        name_(model_name<M>::get()),
        embedding_(model.config(), tp, rows),
        blocks_(make_blocks(model, tp, rows, spec)),
        head_(model.config(), tp, rows),
        units_(decoder_units(model, spec, tp.size())),
        store_(layouts(units_, tp), zero, dp),
        params_(store_, order(units_), units_.embedding.size()) {
    require(recompute != Recompute::selective ||
                drops_attention_core<typename Block::Activations>::value,
            "model " + name_ +
                ": --recompute selective needs its block's Activations to have "
                "drop_attention_core() (what selective recomputation drops, and its backward "
                "recomputes: model/decoder_stage.hpp); use --recompute none or full");
    store_.initialise([&](int u, T* out) {
      initialise_unit(
          store_.layout(u),
          [&](const ParamSpec& p, std::uint64_t g) { return model.initial_value(p, g); }, out);
    });
  }

  UnitStore<T, S, B>& store() { return store_; }
  // The blocks' loss terms and expert tokens of the training forwards since the last call.
  LayerFigures take_layer_figures() { return std::exchange(figures_, LayerFigures{}); }
  const StageSpec& spec() const { return spec_; }
  // Elements of the activation passed between pipeline stages.
  std::size_t activation_size() const { return blocks_.front().activation_size(); }
  // What one whole layer's forward kept for its backward, bytes (before full recomputation
  // drops it; after selective recomputation dropped the attention core's), as measured by
  // MemoryStats, the largest of the stage's layers (an MoE layer's, where layers differ); 0 before
  // a layer ran (the run report's activations).
  double layer_activation_bytes() const { return layer_activation_bytes_; }
  // Elements of one block of keys and values that ring attention passes (cp/): the Block's,
  // for a model with kContextParallel.
  std::size_t ring_block_size() const { return blocks_.front().ring_block_size(); }

  // input from the previous stage (ignored on the first, which embeds data.inputs); output for
  // the next stage (ignored on the last); both in B's memory. Returns this microbatch's loss
  // times `scale` (the last stage; 0 elsewhere).
  double forward(int mb, const Microbatch& data, const T* input, T* output, T scale) {
    Stash& st = stash_[mb];
    scale_ = scale;
    const std::size_t k = layers_forward(st, data, input, output, /*keep=*/true);
    return spec_.last() ? head_loss(st, k, data, scale) : 0;
  }

  // Forward only (evaluation: train/evaluate.hpp): as forward, keeping nothing for a backward.
  double forward_only(const Microbatch& data, const T* input, T* output, T scale) {
    Stash st;
    const std::size_t k = layers_forward(st, data, input, output, /*keep=*/false);
    return spec_.last() ? head_loss(st, k, data, scale) : 0;
  }
  // Sampling (train/sample.hpp): as forward_only; the last stage writes, instead of the loss,
  // the next-token logits (vocab, host memory) after token `position` of the microbatch's row 0.
  void forward_logits(const Microbatch& data, const T* input, T* output, int position, T* logits) {
    Stash st;
    const std::size_t k = layers_forward(st, data, input, output, /*keep=*/false);
    if (!spec_.last()) return;
    const auto w = params_.use(k, units_.head.size());
    const PartCall c = forward_call(name_);
    const ContractScope scope(c);
    head_.logits(st.head_input.data(), position, w.data(), logits);
    params_.release(k, units_.head.size());
  }

  // doutput from the next stage (ignored on the last); dinput for the previous stage (ignored
  // on the first); both in B's memory. last: the step's last weight-gradient pass of this
  // stage (the units' gradients are then complete: their DP reductions start). part: both
  // (fused), or zero-bubble's B (input: writes dinput, keeps what W needs in the stash) and W
  // (weight: the units' gradients from the stash; doutput, dinput unused, no parameters read).
  void backward(int mb, const Microbatch& data, const T* doutput, T* dinput, T scale, bool last,
                nn::BackwardPart part = nn::BackwardPart::both) {
    (void)data;  // its token ids are in the stash since the forward
    Stash& st = stash_.at(mb);
    const std::size_t size = activation_size();
    const bool in = nn::computes_input(part), wt = nn::computes_weights(part);
    expect(!in || spec_.last() || doutput != nullptr, "doutput", "backward");
    expect(!in || spec_.first() || dinput != nullptr, "dinput", "backward");
    // each written whole before it is read (the head's or the next stage's gradient, a block's dx)
    Buf d(MemoryKind::buffers, in ? size : 0, Fill::none),
        dnext(MemoryKind::buffers, in ? size : 0, Fill::none);
    std::size_t k = params_.uses();  // walk the use order in reverse
    if (spec_.last())
      k = head_backward(st, k, (spec_.layers == 0 && !spec_.first()) ? dinput : d.data(), scale,
                        last, part);
    else if (in)
      B::copy(d.data(), doutput, size * sizeof(T));
    if (part == nn::BackwardPart::input) st.grads.resize(spec_.layers);
    for (int l = spec_.layers - 1; l >= 0; --l) {
      --k;
      const T* w = in ? params_.use_backward(k, 1)[0] : nullptr;
      if (recompute_ == Recompute::full && in) {
        Buf out(MemoryKind::buffers, size);
        const PartCall c = backward_call(name_, "Block::forward (recomputed)", part);
        const ContractScope scope(c);
        block(l).forward(st.blocks[l], out.data(), w, spec_.halves(l));
      }
      T* dx = !in ? nullptr : (l == 0 && !spec_.first()) ? dinput : dnext.data();
      typename Block::Gradients fused;
      const PartCall c = backward_call(name_, "Block::backward", part);
      const ContractScope scope(c);
      block_backward(l, st.blocks[l], dx, d.data(), w, params_.grads(k, 1)[0],
                     part == nn::BackwardPart::both ? fused : st.grads[l], part, scale);
      if (in) params_.release(k, 1);
      if (part == nn::BackwardPart::input) {
        st.blocks[l].drop_what_weight_gradients_do_not_need();
      } else {
        st.blocks[l] = typename Block::Activations{};
        if (!st.grads.empty()) st.grads[l] = typename Block::Gradients{};
        params_.launch_gradient_reduction(k, 1, last);
      }
      store_.poll();
      if (dx == dnext.data() && in) std::swap(d, dnext);
    }
    if (spec_.first() && part == nn::BackwardPart::input) {  // W needs the output's gradient
      st.dembedding.allocate(MemoryKind::activations, d.size(), Fill::none);
      B::copy(st.dembedding.data(), d.data(), d.bytes());
    } else if (spec_.first()) {
      const std::size_t e = units_.embedding.size();
      const auto g = params_.grads(0, e);
      const PartCall c = backward_call(name_, "Embedding::backward", part);
      const ContractScope scope(c);
      embedding_.backward(g.data(), in ? d.data() : st.dembedding.data(), st.inputs.data());
      params_.launch_gradient_reduction(0, e, last);
    }
    if (wt) stash_.erase(mb);
  }

 private:
  // The stage's blocks, one per layer (a stage of no layers keeps one, for its sizes).
  static std::vector<Block> make_blocks(const M& model, const TensorParallel<B>& tp, int rows,
                                        const StageSpec& s) {
    std::vector<Block> blocks;
    blocks.reserve(std::max(1, s.layers));
    for (int l = 0; l < std::max(1, s.layers); ++l)
      blocks.push_back(block_of_layer<Block>(model.config(), tp, rows, s.first_layer + l));
    return blocks;
  }
  const Block& block(int l) const { return blocks_[l]; }
  // A training forward's figures of layer l (LayerFigures).
  void note_figures(int l, const typename Block::Activations& a) {
    if constexpr (adds_to_loss<Block>::value) {
      figures_.loss_terms += block(l).loss_term(a, scale_);
      const auto& tokens = block(l).expert_tokens(a);
      if (tokens.empty()) return;
      std::vector<double>& sum = figures_.expert_tokens[spec_.first_layer + l];
      sum.resize(tokens.size());
      for (std::size_t e = 0; e < tokens.size(); ++e) sum[e] += tokens[e];
    }
  }
  // Layer l's backward (of the microbatch whose activations are `a`), with the loss's scale
  // when the block adds a term to the loss.
  void block_backward(int l, const typename Block::Activations& a, T* dx, const T* dout, const T* w,
                      T* g, typename Block::Gradients& d, nn::BackwardPart part, T scale) const {
    if constexpr (adds_to_loss<Block>::value)
      block(l).backward(a, dx, dout, w, g, d, part, spec_.halves(l), scale);
    else
      block(l).backward(a, dx, dout, w, g, d, part, spec_.halves(l));
  }

  // A pointer the trainer gives the stage (its pass's contract above).
  void expect(bool given, const char* what, const char* pass) const {
    require(given, "model " + name_ + ": stage " + std::to_string(spec_.index) + "'s " + pass +
                       " was given a null " + what +
                       " (the stage contract, model/model.hpp, gives one there)");
  }

  struct Stash {
    std::vector<typename Block::Activations> blocks;
    std::vector<typename Block::Gradients> grads;  // from B to W (zero-bubble schedules)
    Buf head_input;                                // last stage: the last block's output
    typename Head::Activations head;
    Buf dembedding;       // first stage, from B to W: the embedding output's gradient
    Ids inputs, targets;  // the microbatch's token ids: first stage, last stage
  };

  // The head's backward (the last stage), its gradient into dx (B's memory; unused in W), from
  // position k of the use order; returns the head's position.
  std::size_t head_backward(Stash& st, std::size_t k, T* dx, T scale, bool last,
                            nn::BackwardPart part) {
    const bool in = nn::computes_input(part), wt = nn::computes_weights(part);
    const std::size_t h = units_.head.size();
    k -= h;
    const auto w = in ? params_.use_backward(k, h) : std::vector<const T*>(h, nullptr);
    const auto g = params_.grads(k, h);  // B may take the cheap gradients (norms) itself
    const PartCall c = backward_call(name_, "Head::backward", part);
    const ContractScope scope(c);
    head_.backward(st.head, in ? dx : nullptr, st.head_input.data(), st.targets.data(), w.data(),
                   g.data(), scale, part);
    if (in) params_.release(k, h);
    if (wt) params_.launch_gradient_reduction(k, h, last);
    return k;
  }
  // The embedding (first stage) and the blocks into st; the last block's output to `output`
  // (or st.head_input on the last stage). keep: what the backward needs stays in st (else each
  // block's activations go as soon as the next block has its input). Returns the head's
  // position in the use order.
  std::size_t layers_forward(Stash& st, const Microbatch& data, const T* input, T* output,
                             bool keep) {
    const std::size_t size = activation_size();
    std::size_t k = 0;  // position in the use order
    st.blocks.resize(spec_.layers);
    for (auto& a : st.blocks) a.x.allocate(MemoryKind::activations, size);
    if (spec_.last()) st.head_input.allocate(MemoryKind::activations, size);
    T* first = spec_.layers ? st.blocks[0].x.data() : st.head_input.data();
    expect(spec_.first() || input != nullptr, "input", "forward");
    expect(spec_.last() || output != nullptr, "output", "forward");
    const PartCall c = forward_call(name_);
    const ContractScope scope(c);
    if (spec_.first()) {
      st.inputs = ids(data.inputs);
      const auto w = params_.use(k, units_.embedding.size());
      embedding_.forward(first, st.inputs.data(), w.data());
      params_.release(k, units_.embedding.size()), k += units_.embedding.size();
    } else {
      B::copy(first, input, size * sizeof(T));
    }
    for (int l = 0; l < spec_.layers; ++l) {
      T* out = l + 1 < spec_.layers ? st.blocks[l + 1].x.data()
               : spec_.last()       ? st.head_input.data()
                                    : output;
      const std::size_t held = memory_stats().current(MemoryKind::activations);
      block(l).forward(st.blocks[l], out, params_.use(k, 1)[0], spec_.halves(l));
      if (keep && recompute_ == Recompute::selective) drop_attention_core(st.blocks[l]);
      if (keep && spec_.halves(l) == nn::BlockHalves::both)  // its input x, and what it kept
        layer_activation_bytes_ = std::max(
            layer_activation_bytes_,
            double(memory_stats().current(MemoryKind::activations) - held + size * sizeof(T)));
      params_.release(k, 1), ++k;
      if (keep) note_figures(l, st.blocks[l]);
      if (!keep)
        st.blocks[l] = typename Block::Activations{};
      else if (recompute_ == Recompute::full)
        keep_only_input(st.blocks[l]);
    }
    return k;
  }
  // Selective recomputation: what the block's backward recomputes goes after its forward.
  static void drop_attention_core(typename Block::Activations& a) {
    if constexpr (drops_attention_core<typename Block::Activations>::value) a.drop_attention_core();
  }
  // The last stage's head: the microbatch's loss times scale, its tokens' losses summed on the
  // host in double (one download per microbatch).
  double head_loss(Stash& st, std::size_t k, const Microbatch& data, T scale) {
    st.targets = ids(data.targets);
    Buf losses(MemoryKind::buffers, data.targets.size(), Fill::none);
    const auto w = params_.use(k, units_.head.size());
    const PartCall c = forward_call(name_);
    const ContractScope scope(c);
    head_.forward(st.head, losses.data(), st.head_input.data(), st.targets.data(), w.data());
    params_.release(k, units_.head.size());
    std::vector<T> host(losses.size());
    backend::download(losses, host.data());
    double sum = 0;
    for (T l : host) sum += l;
    return sum * scale;
  }
  // Token ids in B's memory (one upload).
  static Ids ids(const std::vector<std::int32_t>& host) {
    Ids d(MemoryKind::buffers, host.size(), Fill::none);
    backend::upload(d, host.data());
    return d;
  }

  // The store's layouts, with how often each unit is read per microbatch (train/formulas.hpp):
  // every use in forward; in backward, every use but the embedding's (it reads no parameters).
  static std::vector<UnitLayout> layouts(const DecoderUnits& d, const TensorParallel<B>& tp) {
    std::vector<UnitLayout> out;
    for (const UnitSpec& u : d.units) {
      out.push_back(layout_unit(u, tp.size(), tp.rank()));
      out.back().forward_reads = out.back().backward_reads = 0;
    }
    for (int u : d.embedding) ++out[u].forward_reads;
    for (const auto* part : {&d.layers, &d.head})
      for (int u : *part) {
        ++out[u].forward_reads;
        ++out[u].backward_reads;
      }
    return out;
  }
  static std::vector<int> order(const DecoderUnits& d) {
    std::vector<int> o = d.embedding;
    o.insert(o.end(), d.layers.begin(), d.layers.end());
    o.insert(o.end(), d.head.begin(), d.head.end());
    return o;
  }

  StageSpec spec_;
  Recompute recompute_;
  std::string name_;  // the model's, for contract messages
  Embedding embedding_;
  std::vector<Block> blocks_;
  Head head_;
  DecoderUnits units_;
  UnitStore<T, S, B> store_;
  StageParams<T, S, B> params_;
  std::map<int, Stash> stash_;
  double layer_activation_bytes_ = 0;
  T scale_ = T(0);        // the loss's scale of the training forward under way
  LayerFigures figures_;  // since take_layer_figures
};

}  // namespace trident
