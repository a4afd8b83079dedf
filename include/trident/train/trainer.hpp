// trident/train/trainer.hpp: one training step = schedule x model x ZeRO policy
// (ARCHITECTURE §2, the data path of one step).
//
// Generic over the model (model/model.hpp) and the backend B (backend/cpu/cpu.hpp): a
// Trainer<M, T, S, B> builds one M::Stage<T, S, B> per virtual stage this rank holds and knows
// the model only through M's interface; its parameters, gradients, optimizer states and
// activations live in B's memory, its collectives go through the mesh's DeviceComm<B>s
// (mesh/device_mesh.hpp). Host code never reads B's memory: the loss (per microbatch) and the
// gradient norm's sums (per step) cross once, counted (backend/device_buffer.hpp).
//
//  1. The global batch (batch sequences) is split over DP ranks by rows, each rank's rows into
//     m microbatches: row r of the global batch is the same sequence on every mesh. Under
//     context parallelism each CP rank of a replica takes its chunks of those rows' tokens
//     (cp/context_parallel.hpp); the parameters' gradients are then summed over DP x CP.
//  2. The pipeline executor runs this stage's schedule; each model chunk keeps its parameters
//     in a UnitStore, whose ZeRO policy launches the DP gradient reduction as units finish.
//  3. After the last backward: the DP reductions complete; with sequence parallelism the
//     TP-replicated parameters' gradients (partial per sequence shard) are summed over TP;
//     the copies of each tied parameter (train/ties.hpp) are summed.
//  4. The global gradient norm (each element counted on one rank), clipping, AdamW on what
//     each rank owns, and the parameters published (bf16 copies, DP all-gather).
//  5. The loss is the mean over the global batch's tokens, as in the single-process model.
//  A non-finite loss or gradient norm (the same value on every rank, both are all-reduced)
//  stops the run with an Error naming the step, or, with skip_nonfinite, skips the update:
//  StepResult::skipped, the parameters and moments stay as they were.
#pragma once

#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "../backend/caching_allocator.hpp"
#include "../backend/cpu/cpu.hpp"
#include "../backend/cpu/threads.hpp"
#include "../backend/ops.hpp"
#include "../core/environment.hpp"
#include "../core/fault.hpp"
#include "../data/tokens.hpp"
#include "../mesh/device_mesh.hpp"
#include "../pp/executor.hpp"
#include "../pp/grouped_p2p.hpp"
#include "../tp/tensor_parallel.hpp"
#include "../zero/optimizer.hpp"
#include "ties.hpp"

namespace trident {

// [[nodiscard]]: a step's loss, norm and skip flag are what a caller checks; drop them with
// (void) where a step is only run (a warm-up).
struct [[nodiscard]] StepResult {
  double loss = 0, grad_norm = 0, lr = 0, seconds = 0;
  double origin = 0;             // the step's start (detail::now_seconds), intervals' zero
  double optimizer_seconds = 0;  // the gradient norm and the update
  bool skipped = false;          // a non-finite loss or gradient norm; no update (skip_nonfinite)
  std::vector<pp::Interval> intervals;  // this rank's pipeline timeline
};

template <class M, class T, class S = T, class B = backend::Cpu>
class Trainer : CheckedModel<M, T, S, B> {  // its static_asserts first (model/model.hpp)
 public:
  using Model = M;
  using Backend = B;
  using Chunk = typename M::template Stage<T, S, B>;

  // Defined below the class, not inline, as are step(bool) and optimizer(): a program that
  // compiles them once declares `extern template class Trainer<...>` (docs/BUILD.md).
  Trainer(const Comm& world, M model, TrainOptions o, TokenSource data);

  const M& model() const { return model_; }
  const TrainOptions& options() const { return o_; }
  const Mesh<>& mesh() const { return mesh_; }
  // The mesh's groups on B's memory, and the collective path they take.
  const DeviceMesh<B>& device_mesh() const { return *groups_; }
  // Why the pipeline's messages take host staging where the rest takes NCCL; empty otherwise.
  const std::string& pipeline_note() const { return pipeline_note_; }
  const TensorParallel<B>& tp() const { return tp_; }
  int chunks() const { return static_cast<int>(chunks_.size()); }
  Chunk& chunk(int c) { return *chunks_[c]; }
  int steps_done() const { return step_; }
  // Whether unit u of chunk c is the second copy of a tied parameter (counted on the first).
  bool tied_copy(int c, int u) const {
    for (const LocalTie& t : ties_)
      if (t.other_chunk == c && t.other_unit == u) return true;
    return false;
  }
  const std::vector<LocalTie>& ties() const { return ties_; }
  // Resuming (io/checkpoint.hpp): the optimizer steps already taken. The step is the position
  // of the learning-rate schedule, of the data sampler (sample_rows) and AdamW's bias correction.
  void restore_step(int steps) {
    require(steps >= 0, "a checkpoint's step must be non-negative");
    step_ = steps;
  }

  // One optimizer step on the global batch of step `step_` (0-based). Collective.
  StepResult step() { return step(/*apply=*/true); }

  // Forward, backward and all gradient reductions, without the optimizer: gradients are left
  // in the stores (reduced_grads) for inspection (--dump-grads). Collective.
  StepResult gradients_only() { return step(/*apply=*/false); }

  // Reduced gradients of the last gradients_only(): the stage must then be finished by
  // apply_optimizer().
  void apply_optimizer(StepResult& r) { optimizer(r); }

 private:
  struct Stage {  // what the executor calls
    Trainer& t;
    double loss = 0;
    void forward(int mb, int c, const T* in, T* out) {
      fault::before_forward(t.mesh_.world().rank(), t.step_);
      loss += t.chunks_[c]->forward(mb, t.micro_[mb], in, out, t.scale());
    }
    void backward(int mb, int c, const T* dout, T* din, nn::BackwardPart part, bool last) {
      t.chunks_[c]->backward(mb, t.micro_[mb], dout, din, t.scale(), last, part);
    }
  };

  T scale() const { return T(1) / (T(o_.batch) * T(model_.seq())); }  // 1 / global tokens

  StepResult step(bool apply);
  void optimizer(StepResult& r);

  // Step 3 of the data path: the sums over TP (sequence parallelism) and of tied copies (the
  // word embedding's, a layer split between stages), on whatever part of the reduced gradient
  // this rank holds.
  void sync_replicated_gradients() {
    if (tp_.sequence_parallel && tp_.size() > 1)
      for (auto& c : chunks_) {
        UnitStore<T, S, B>& st = c->store();
        std::vector<Span<S>> ranges;  // TP-replicated elements of every unit, one all-reduce
        visit_replicated(st, [&](Span<S> r) { ranges.push_back(r); });
        std::size_t n = 0;
        for (const Span<S>& r : ranges) n += r.size();
        backend::DeviceBuffer<S, B> packed(MemoryKind::buffers, n, Fill::none);
        std::size_t at = 0;
        for (const Span<S>& r : ranges)
          B::copy(packed.data() + at, r.data(), r.bytes()), at += r.size();
        tp_.all_reduce(packed.data(), n);
        at = 0;
        for (const Span<S>& r : ranges)
          B::copy(r.data(), packed.data() + at, r.bytes()), at += r.size();
      }
    sum_tied_gradients();
  }
  // The copies of each tied parameter are summed wherever they live (train/ties.hpp): here
  // when both are on this rank; over the embedding group (Megatron's, mesh/mesh.hpp) when they
  // are on the first and the last pipeline rank; else with the pipeline rank holding the other
  // (a layer split between neighbours), each side adding the other's copy to its own. Either
  // way the two copies stay bitwise equal (floating-point addition is commutative).
  void sum_tied_gradients() {
    constexpr int kTieTag = 32000;  // above the pipeline executor's tags (pp/executor.hpp)
    for (const LocalTie& t : ties_) {
      if (t.on_this_rank()) {  // one sum, the same in both copies
        const Span<S> a = chunks_[t.chunk]->store().reduced_grads(t.unit),
                      b = chunks_[t.other_chunk]->store().reduced_grads(t.other_unit);
        backend::sum_both<B>(a.data(), b.data(), a.size());
        continue;
      }
      if (t.peer < 0) continue;  // neither copy here
      const bool first = t.chunk >= 0;
      const Span<S> mine = chunks_[first ? t.chunk : t.other_chunk]->store().reduced_grads(
          first ? t.unit : t.other_unit);
      if (t.over_embedding_group) {
        groups_->embedding().all_reduce(mine.data(), mine.size());
        continue;
      }
      backend::DeviceBuffer<S, B> theirs(MemoryKind::buffers, mine.size(), Fill::none);
      groups_->pp().exchange(mine.data(), theirs.data(), mine.size(), t.peer, kTieTag);
      // a + b == b + a: the same on both sides
      backend::accumulate<B>(mine.data(), theirs.data(), mine.size());
    }
  }
  // f(range): each range of TP-replicated elements of the reduced gradients this rank holds.
  template <class F>
  static void visit_replicated(UnitStore<T, S, B>& st, F&& f) {
    for (int u = 0; u < st.size(); ++u) {
      const Span<S> g = st.reduced_grads(u);
      const std::size_t begin = st.policy().stage == 0 ? 0 : st.shard_begin(u);
      for_each_param_in(st.layout(u), begin, begin + g.size(),
                        [&](const LocalParam& p, std::size_t a, std::size_t e) {
                          if (p.tp_replicated()) f(Span<S>(g.data() + (a - begin), e - a));
                        });
    }
  }

  M model_;
  TrainOptions o_;
  Mesh<> mesh_;
  TokenSource data_;
  std::unique_ptr<DeviceMesh<B>> groups_;
  std::string pipeline_note_;
  TensorParallel<B> tp_;
  std::vector<LocalTie> ties_;
  std::vector<std::unique_ptr<Chunk>> chunks_;
  std::unique_ptr<pp::Executor<T, B>> executor_;
  std::vector<Microbatch> micro_;
  int step_ = 0;
};

template <class M, class T, class S, class B>
Trainer<M, T, S, B>::Trainer(const Comm& world, M model, TrainOptions o, TokenSource data)
    : model_(std::move(model)),
      o_((validate(model_, o, world.size()), o)),
      mesh_(world, o.mesh),
      data_(std::move(data)) {
  if (!threads_configured()) configure_threads(world);  // a rank's share of the node's cores
  o_.optimizer = o_.optimizer.for_run(o_.steps);        // the schedule follows the run
  require(o_.mesh.cp == 1 || B::kHostKernels,
          std::string("context parallelism: ring attention has no ") + B::kName +
              " kernel yet (--cp runs on the cpu and emulated backends)");
  require(data_.vocab() <= model_.vocab(), "the data '" + data_.name() + "' has token ids up to " +
                                               std::to_string(data_.vocab() - 1) +
                                               ", at or above the model's vocabulary of " +
                                               std::to_string(model_.vocab()));
  const std::vector<int> split = layer_split(model_, o_);
  const int p = o_.mesh.pp, v = o_.virtual_stages;
  const pp::ChunkMap map = o_.chunk_map();
  const auto schedule = pp::make_schedule({o_.schedule, p, o_.microbatches, v});
  // the device's path; the pipeline's too, unless its messages do not suit NCCL's
  // point-to-point (pp/grouped_p2p.hpp), then staged through the host
  const backend::CollectivePath path = B::attach(world);
  if (path == backend::CollectivePath::nccl)
    pipeline_note_ = pp::grouped_p2p_problem(schedule, map);
  groups_ = std::make_unique<DeviceMesh<B>>(
      mesh_, path, pipeline_note_.empty() ? path : backend::CollectivePath::host_staging);
  tp_ = TensorParallel<B>(&mesh_.tp(), o_.sequence_parallel, groups_->tp());
  tp_.cp = {groups_->cp(), o_.cp_split};
  ties_ = locate_ties(model_, split, o_.mesh.tp, map, mesh_.stage());
  // The stages' model states are allocated here: a device too small for them is one Error on
  // every rank (the lowest failing rank's), not a hang. The only collective of the stores'
  // construction, the DP group's shared-memory segment, is made first, so that no rank waits
  // in it for a rank that has failed.
  if (shm_tuning().enabled && mesh_.dp_cp().size() > 1) (void)shared_segment(mesh_.dp_cp().get());
  std::string failed;
  try {
    for (int c = 0; c < v; ++c)
      chunks_.push_back(std::make_unique<Chunk>(
          model_, tp_, stage_spec(split, map.virtual_stage(c, mesh_.stage())),
          o_.rows_per_microbatch(), groups_->dp_cp(), o_.zero, o_.recompute));
  } catch (const backend::DeviceOutOfMemory& e) {
    failed = std::string(e.what()) + " (rank " + std::to_string(world.rank()) +
             ", building its model states)";
  }
  agree(world, failed.empty(), failed);
  executor_ = std::make_unique<pp::Executor<T, B>>(
      groups_->pp(), schedule[mesh_.stage()], o_.microbatches, v, chunks_[0]->activation_size(),
      o_.verbose, map.placement);
}

template <class M, class T, class S, class B>
StepResult Trainer<M, T, S, B>::step(bool apply) {
  StepResult r;
  const int b = o_.rows_per_microbatch();
  micro_.clear();
  for (int mb = 0; mb < o_.microbatches; ++mb) {
    const int row = (mesh_.coord().dp * o_.microbatches + mb) * b;
    micro_.push_back(
        cp_slice(tp_.cp, sample_rows(data_, o_.data_seed, step_, row, b, model_.seq())));
  }
  for (auto& c : chunks_) c->store().begin_step();
  flight_recorder().set_step(step_);
  mesh_.world().barrier();
  const double origin = detail::now_seconds();
  flight_recorder().begin_step_log();  // the step's calls, for train/waits.hpp
  r.origin = origin;
  Stage stage{*this};
  r.intervals = executor_->run(stage, origin);
  for (auto& c : chunks_) c->store().finish_gradient_reduction();
  sync_replicated_gradients();
  // the loss: summed over the microbatches, DP replicas and CP ranks of the stage holding the last
  // virtual stage (TP rank 0): the last stage, or stage 0 in ZB-V's V
  const bool counts = o_.holds_loss(mesh_.stage()) && mesh_.coord().tp == 0;
  const bool poison = fault::armed("nan-loss", mesh_.world().rank(), step_);
  r.loss = mesh_.world().all_reduce_value(poison ? std::nan("") : counts ? stage.loss : 0.0);
  const double before_optimizer = detail::now_seconds();
  if (apply) optimizer(r);
  r.seconds = detail::now_seconds() - origin;
  r.optimizer_seconds = r.origin + r.seconds - before_optimizer;
  flight_recorder().end_step_log();
  return r;
}

template <class M, class T, class S, class B>
void Trainer<M, T, S, B>::optimizer(StepResult& r) {
  ++step_;
  backend::SquareSums<B, S> sums;  // every chunk's ranges, one copy to the host
  for (int c = 0; c < chunks(); ++c)
    add_shard_squares(sums, chunks_[c]->store(), [&](int u, const LocalParam& p) {
      if (p.tp_replicated() && mesh_.coord().tp != 0) return false;
      return !tied_copy(c, u);
    });
  double squares = 0;
  for (double x : sums.compute()) squares += x;
  if (fault::armed("nan-grad", mesh_.world().rank(), step_ - 1)) squares = std::nan("");
  r.grad_norm = std::sqrt(mesh_.world().all_reduce_value(squares));
  r.lr = o_.optimizer.lr_at(step_ - 1);
  if (!std::isfinite(r.loss) || !std::isfinite(r.grad_norm)) {
    const std::string what = "step " + std::to_string(step_ - 1) + ": the loss is " +
                             std::to_string(r.loss) + " and the gradient norm " +
                             std::to_string(r.grad_norm);
    require(o_.skip_nonfinite, what + "; stopping (--skip-nonfinite skips such steps)");
    r.skipped = true;  // no update: parameters and moments stay as they were
    for (auto& c : chunks_) c->store().end_step();
    return;
  }
  const double scale = o_.optimizer.clip_scale(r.grad_norm);
  for (auto& c : chunks_) {
    adamw_step(c->store(), o_.optimizer, step_, r.lr, scale);
    c->store().end_step();
  }
}

}  // namespace trident
