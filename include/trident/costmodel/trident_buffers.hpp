// trident/costmodel/trident_buffers.hpp: the peak of a rank's communication buffers and
// temporaries (MemoryKind::buffers) over a step, from the run's options alone: the third kind of
// memory --dry-run and --layout auto predict, next to trident_memory.hpp's model states and
// activations. A walk of the stage's schedule, as trident_memory.hpp's activations, with what
// each pass holds:
//  - pipeline messages (pp/executor.hpp): every receive of the step posted at its start into its
//    own buffer and freed once the compute that reads it is done; a message to send from the
//    compute that writes it until its send, taken as complete at once;
//  - token ids (model/decoder_stage.hpp): a microbatch's inputs (first stage) and targets (last)
//    from its forward until its backward is done (W under zero-bubble);
//  - ZeRO (zero/unit_store.hpp, model/stage_params.hpp): stage 3 gathers the unit in use and the
//    next in the use order (the backward: the previous one), mixed precision converts each use to
//    T; stages 2 and 3 accumulate a microbatch's gradient of a unit in a scratch copy from its
//    backward until its reduce-scatter, in flight until the unit's next one is launched (which
//    waits for it) or the step ends: the most it holds, when poll() finds none finished early;
//  - each pass's temporaries: the embedding's partial sums, a block's projection outputs (and
//    under SP the LayerNorm's local rows and the projections' partial sums), a fused backward's
//    gradients and the LayerNorms' dy, the loss's row statistics, the decoder's two gradients of
//    the residual stream, a recomputed layer's output, ring attention's blocks under CP, and under
//    selective recomputation an attention half's recomputed probabilities and (discarded) output.
// Left out: the gradient norm's partial sums and the end-of-step reductions' shard of one unit.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "trident_memory.hpp"

namespace trident::costmodel {

namespace detail {
// Bytes of one microbatch's temporaries of each pass on one rank (T elements times T's size);
// a layer's by the halves it runs (nn/block_halves.hpp).
struct PassBuffers {
  double embedding_forward = 0, head_forward = 0, head_backward = 0, embedding_backward = 0;
  double N = 0, n = 0, C = 0, Cl = 0, tb = 0;
  bool sp = false;
  double ring_forward = 0, ring_backward = 0;  // CP > 1: in an attention half's passes
  double recomputed_core = 0;  // selective: an attention half's B recomputes probs and out

  double layer_forward(nn::BlockHalves h) const {  // y; ln_local, y_partial
    return (n * C + (sp ? n * C + N * C : 0)) * tb + (nn::runs_attention(h) ? ring_forward : 0);
  }
  // B, or the fused pass (fused: the gradients d.* it keeps as buffers)
  double layer_backward(nn::BlockHalves h, bool fused) const {
    const bool att = nn::runs_attention(h), mlp = nn::runs_mlp(h);
    double e = (att ? N * Cl : 0) + n * C + (sp ? N * C : 0);  // d_att, dln, dln_full
    if (fused)                                                 // dy_mlp, d_fc, dx2, d_qkv
      e += (sp ? N * C : 0) + (mlp ? 4 * N * Cl : 0) + (mlp && att ? n * C : 0) +
           (att ? 3 * N * Cl : 0);
    return e * tb + (att ? ring_backward + recomputed_core : 0);
  }
};

inline PassBuffers pass_buffers(const gpt2::Options& o, const ActivationShape& a, double tb) {
  PassBuffers b;
  b.N = a.N;
  b.n = a.n;
  b.C = a.C;
  b.Cl = a.Cl;
  b.tb = tb;
  b.sp = o.sequence_parallel && o.mesh.tp > 1;
  const double NC = a.N * a.C, nC = a.n * a.C;
  b.embedding_forward = NC * tb;                      // partial
  b.head_forward = ((b.sp ? nC : 0) + 4 * a.N) * tb;  // local; row_max, sums, losses
  b.head_backward = (nC + (b.sp ? NC : 0)) * tb;      // dln; dfull
  b.embedding_backward = (b.sp ? NC : 0) * tb;        // dfull
  if (o.recompute == Recompute::selective)            // cp/attention.hpp's attention_probabilities
    b.recomputed_core = (probability_elements(a) + a.N * a.Cl) * tb;
  if (o.mesh.cp > 1) {  // cp/ring_attention.hpp: blocks of K, V (2 N Cl), statistics
    const double block = 2 * a.N * a.Cl, stats = a.B * a.heads * a.seq;
    const double chunks = o.cp_split == CpSplit::contiguous ? o.mesh.cp : 2 * o.mesh.cp;
    b.ring_forward = (2 * block + 2 * stats + stats * chunks) * tb;
    b.ring_backward = (4 * block + stats + (o.mesh.cp > 2 ? 2 : 1) * block) * tb;
  }
  return b;
}

// A chunk's units in its use order (stage_params.hpp): embedding, layers, head (LN_f, then the
// tied word embedding, on one stage the embedding's own unit 0): each use's unit.
inline std::vector<std::size_t> use_order(const ChunkUnits& c) {
  std::vector<std::size_t> order;
  for (std::size_t u = 0; u < c.units.size(); ++u) order.push_back(u);
  if (c.head && c.embedding) order.push_back(0);
  return order;
}
}  // namespace detail

namespace detail {
// stage_buffer_bytes' walk: what a rank holds between its schedule's passes (held: messages,
// token ids, kept ZeRO-3 copies; copies: gradient copies being filled; in flight: being
// reduced) and, on top, during each part of a pass.
class BufferWalk {
 public:
  BufferWalk(const gpt2::Options& o, int stage, const Precision& p)
      : o_(o),
        a_(activation_shape(o)),
        tb_(p.activation_bytes),
        sb_(p.param_bytes),
        pass_(pass_buffers(o, a_, tb_)),
        chunks_(stage_chunks(o, stage)),
        schedule_(pp::make_schedule(
            {o.schedule, o.mesh.pp, o.microbatches, o.virtual_stages})[std::size_t(stage)]),
        msg_(a_.n * a_.C * tb_),
        ids_(4 * a_.N) {
    for (const pp::Action& act : schedule_) {
      listed_.insert({act.op, act.microbatch, act.chunk});
      if (act.op == pp::Op::recv_forward || act.op == pp::Op::recv_backward) held_ += msg_;
    }
    for (const pp::Action& act : schedule_) {
      if (act.op == pp::Op::forward) forward(act);
      const bool backward = act.op == pp::Op::backward || act.op == pp::Op::backward_input ||
                            act.op == pp::Op::backward_weight;
      if (backward) this->backward(act);
    }
  }
  double peak() const { return peak_; }

 private:
  static constexpr std::size_t npos = std::size_t(-1);
  void at(double now) { peak_ = std::max(peak_, held_ + copies_ + in_flight_ + now); }
  bool listed(pp::Op op, const pp::Action& act) const {
    return listed_.count({op, act.microbatch, act.chunk}) > 0;
  }
  double padded(int chunk, std::size_t k) const {
    const std::vector<std::size_t>& order = orders_.at(chunk);
    return k < order.size() ? chunks_[std::size_t(chunk)].units[order[k]].padded : 0.0;
  }

  // ZeRO-3 (or mixed precision's conversion): the units used at positions [k, k + uses) and the
  // one prefetched at position next (npos: none). keep_gathered: each copy stays from its first
  // use to the step's end (held).
  double units(int chunk, std::size_t k, int uses, std::size_t next) {
    const bool zero3 = o_.zero.shards_parameters(), keep = o_.zero.keeps_parameters_gathered();
    if (!zero3 && !mixed()) return 0.0;
    const std::vector<std::size_t>& order = orders_.at(chunk);
    double now = 0;
    for (std::size_t i = k; i < k + std::size_t(uses); ++i) {
      if (!keep)
        now += padded(chunk, i) * tb_;
      else if (kept_.insert({chunk, order[i]}).second)
        held_ += padded(chunk, i) * tb_;
    }
    if (zero3 && next < order.size() && !(keep && kept_.count({chunk, order[next]})))
      now += padded(chunk, next) * sb_;
    return now;
  }

  bool mixed() const { return tb_ != sb_; }
  bool per_microbatch() const { return o_.zero.reduces_per_microbatch(); }  // reduce-scatters
  bool scratch() const { return per_microbatch() || mixed(); }  // a gradient copy per unit

  // A unit's gradient copy, made by the first pass that asks for it (B leaves W its own); at
  // the unit's earliest use its reduction is launched (fused, W): the copy in flight, the
  // previous microbatch's finished; or (mixed precision, ZeRO 0-1) added to the S gradient and
  // freed.
  void made(int chunk, std::size_t k) {
    double& bytes = copy_[{chunk, orders_.at(chunk)[k]}];
    if (scratch() && bytes == 0) {
      bytes = padded(chunk, k) * tb_;
      copies_ += bytes;
    }
  }
  void launched(int chunk, std::size_t k) {
    const std::size_t unit = orders_.at(chunk)[k];
    if (unit != k || !scratch()) return;  // not the unit's earliest use
    double& bytes = copy_[{chunk, unit}];
    copies_ -= bytes;
    bytes = 0;
    if (!per_microbatch()) return;
    double& previous = flying_[{chunk, unit}];  // reduced in S (converted under mixed precision)
    in_flight_ += padded(chunk, k) * sb_ - previous;
    previous = padded(chunk, k) * sb_;
  }

  void forward(const pp::Action& act) {
    const ChunkUnits& c = chunk(act.chunk);
    const double io = listed(pp::Op::send_forward, act) ? msg_ : 0;
    const std::size_t e = c.embedding ? 2 : 0, L = std::size_t(c.layers), h = e + L;
    held_ += (c.embedding ? ids_ : 0) + (c.head ? ids_ : 0);
    if (c.embedding) at(io + pass_.embedding_forward + units(act.chunk, 0, 2, 2));
    for (std::size_t l = 0; l < L; ++l)
      at(io + pass_.layer_forward(c.halves[l]) + units(act.chunk, e + l, 1, e + l + 1));
    if (c.head) at(io + pass_.head_forward + units(act.chunk, h, 2, npos));
    if (listed(pp::Op::recv_forward, act)) held_ -= msg_;
  }

  // Fused, B or W.
  void backward(const pp::Action& act) {
    const ChunkUnits& c = chunk(act.chunk);
    const bool input = act.op == pp::Op::backward_input, in = act.op != pp::Op::backward_weight;
    const bool sends = in && listed(pp::Op::send_backward, act);
    const double base = (sends ? msg_ : 0) + (in ? 2 * msg_ : 0);  // d, dnext
    const std::size_t e = c.embedding ? 2 : 0, L = std::size_t(c.layers), h = e + L;
    const int k = act.chunk;
    if (c.head) {
      if (in) {
        made(k, h);
        made(k, h + 1);
      }
      at(base + (in ? pass_.head_backward + units(k, h, 2, L ? h - 1 : npos) : 0));
      if (!input) {
        launched(k, h);
        launched(k, h + 1);
      }
    }
    for (std::size_t l = L; l-- > 0;) {
      if (in) made(k, e + l);
      const nn::BlockHalves halves = c.halves[l];
      const double recompute =
          in && o_.recompute == Recompute::full ? msg_ + pass_.layer_forward(halves) : 0;
      const double layer = in ? pass_.layer_backward(halves, act.op == pp::Op::backward) : 0;
      at(base + std::max(recompute, layer) +
         (in ? units(k, e + l, 1, l > 0 ? e + l - 1 : npos) : 0));
      if (!input) launched(k, e + l);
    }
    if (c.embedding && !input) {  // B leaves the embedding's backward to W
      made(k, 0);
      made(k, 1);
      at(base + pass_.embedding_backward);
      launched(k, 0);
      launched(k, 1);
    }
    if (!input) held_ -= (c.embedding ? ids_ : 0) + (c.head ? ids_ : 0);
    if (in && listed(pp::Op::recv_backward, act)) held_ -= msg_;
  }

  const ChunkUnits& chunk(int k) {
    if (!orders_.count(k)) orders_[k] = use_order(chunks_[std::size_t(k)]);
    return chunks_[std::size_t(k)];
  }

  const gpt2::Options& o_;
  const ActivationShape a_;
  const double tb_, sb_;  // bytes of T and of S
  const PassBuffers pass_;
  const std::vector<ChunkUnits> chunks_;
  const std::vector<pp::Action> schedule_;
  const double msg_, ids_;  // a pipeline message; a microbatch's int32 token ids
  std::set<std::tuple<pp::Op, int, int>> listed_;  // (op, microbatch, chunk)
  std::map<int, std::vector<std::size_t>> orders_;
  double held_ = 0, copies_ = 0, in_flight_ = 0, peak_ = 0;
  std::map<std::pair<int, std::size_t>, double> copy_, flying_;  // (chunk, unit): bytes
  std::set<std::pair<int, std::size_t>> kept_;
};
}  // namespace detail

// Peak bytes of MemoryKind::buffers of a rank of `stage` over a step (see the top of the file).
inline double stage_buffer_bytes(const gpt2::Options& o, int stage, const Precision& p) {
  return detail::BufferWalk(o, stage, p).peak();
}

}  // namespace trident::costmodel
