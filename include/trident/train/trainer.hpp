// trident/train/trainer.hpp: one training step = schedule x model x ZeRO policy
// (ARCHITECTURE §2, the data path of one step).
//
// Generic over the model (model/model.hpp) and the backend B (backend/cpu/cpu.hpp): one
// M::Stage<T, S, B> per virtual stage this rank holds, known only through M's interface; every
// buffer in B's memory, every collective through the mesh's DeviceComm<B>s. Host code reads only
// the loss (per microbatch) and the gradient norm's sums (per step): backend/device_buffer.hpp.
//
//  1. The global batch (batch sequences) is split over DP ranks by rows, each rank's rows into
//     m microbatches: row r of the global batch is the same sequence on every mesh. Under
//     context parallelism each CP rank of a replica takes its chunks of those rows' tokens
//     (cp/context_parallel.hpp); the parameters' gradients are then summed over DP x CP.
//  2. The pipeline executor runs this stage's schedule; each model chunk keeps its parameters
//     in a UnitStore, whose ZeRO policy launches the DP gradient reduction as units finish.
//  3. After the last backward: the DP reductions complete; with sequence parallelism the
//     TP-replicated parameters' gradients (partial per sequence shard) are summed over TP
//     (tp/sequence_parallel_gradients.hpp), the tied parameters' copies too (train/ties.hpp).
//  4. The global gradient norm (each element counted on one rank: train/gradient_norm.hpp),
//     then the update (train/parameter_update.hpp): clipping, AdamW on what each rank owns, the
//     parameters published (bf16 copies, DP all-gather); none when the loss or the norm is not
//     finite (an Error naming the step, or with skip_nonfinite StepResult::skipped).
//  5. The loss is the mean over the global batch's tokens, as in the single-process model.
//  A step asks TRIDENT_FAULT's faults through fault::StepFaults (core/fault.hpp).
#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "../backend/cpu/cpu.hpp"
#include "../backend/cpu/threads.hpp"
#include "../core/fault.hpp"
#include "../core/flight_recorder.hpp"
#include "../data/tokens.hpp"
#include "../mesh/device_mesh.hpp"
#include "../pp/executor.hpp"
#include "../tp/sequence_parallel_gradients.hpp"
#include "../tp/tensor_parallel.hpp"
#include "device_groups.hpp"
#include "expert_figures.hpp"
#include "gradient_norm.hpp"
#include "model_states.hpp"
#include "parameter_update.hpp"
#include "ties.hpp"

namespace trident {

// [[nodiscard]]: a step's loss, norm and skip flag are what a caller checks; drop them with
// (void) where a step is only run (a warm-up).
struct [[nodiscard]] StepResult {
  double loss = 0, grad_norm = 0, lr = 0, seconds = 0;
  double origin = 0;             // the step's start (detail::now_seconds), intervals' zero
  double optimizer_seconds = 0;  // the gradient norm and the update
  bool skipped = false;          // a non-finite loss or gradient norm; no update (skip_nonfinite)
  // A mixture of experts (train/expert_figures.hpp): the load-balancing loss, in the loss's units
  // (not in `loss`, the LM's), and the busiest expert's tokens over the mean; 0 without experts.
  double aux_loss = 0, expert_load = 0;
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
  bool tied_copy(int c, int u) const { return trident::tied_copy(ties_, c, u); }
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

  // Ends the step that gradients_only() left open: the optimizer on its reduced gradients.
  void apply_optimizer(StepResult& r) { optimizer(r); }

 private:
  struct Stage {  // what the executor calls
    Trainer& t;
    double loss = 0;
    void forward(int mb, int c, const T* in, T* out) {
      t.faults().before_forward();
      loss += t.chunks_[c]->forward(mb, t.micro_[mb], in, out, t.scale());
    }
    void backward(int mb, int c, const T* dout, T* din, nn::BackwardPart part, bool last) {
      t.chunks_[c]->backward(mb, t.micro_[mb], dout, din, t.scale(), last, part);
    }
  };

  T scale() const { return T(1) / (T(o_.batch) * T(model_.seq())); }  // 1 / global tokens
  // TRIDENT_FAULT's faults of the step under way, on this rank (core/fault.hpp).
  fault::StepFaults faults() const { return {mesh_.world().rank(), step_}; }

  StepResult step(bool apply);
  void optimizer(StepResult& r);

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
  validate_backend_and_data<B>(model_, o_, data_);
  const std::vector<int> split = layer_split(model_, o_);
  const int p = o_.mesh.pp, v = o_.virtual_stages;
  const pp::ChunkMap map = o_.chunk_map();
  const auto schedule = pp::make_schedule({o_.schedule, p, o_.microbatches, v});
  groups_ = device_groups<B>(world, mesh_, schedule, map, pipeline_note_);
  tp_ = TensorParallel<B>(&mesh_.tp(), o_.sequence_parallel, groups_->tp());
  tp_.cp = {groups_->cp(), o_.cp_split};
  ties_ = locate_ties(model_, split, o_.mesh.tp, map, mesh_.stage());
  build_model_states(world, mesh_.dp_cp(), [&] {
    for (int c = 0; c < v; ++c)
      chunks_.push_back(std::make_unique<Chunk>(
          model_, tp_, stage_spec(split, map.virtual_stage(c, mesh_.stage())),
          o_.rows_per_microbatch(), groups_->dp_cp(), o_.zero, o_.recompute));
  });
  executor_ = std::make_unique<pp::Executor<T, B>>(
      groups_->pp(), schedule[mesh_.stage()], o_.microbatches, v, chunks_[0]->activation_size(),
      o_.verbose, map.placement);
}

template <class M, class T, class S, class B>
StepResult Trainer<M, T, S, B>::step(bool apply) {
  StepResult r;
  micro_ = replica_microbatches(data_, o_.data_seed, step_, mesh_.coord().dp, o_.microbatches,
                                o_.rows_per_microbatch(), model_.seq(), tp_.cp);
  for (auto& c : chunks_) c->store().begin_step();
  flight_recorder().set_step(step_);
  mesh_.world().barrier();
  r.origin = detail::now_seconds();
  flight_recorder().begin_step_log();  // the step's calls, for train/waits.hpp
  Stage stage{*this};
  r.intervals = executor_->run(stage, r.origin);
  for (auto& c : chunks_) c->store().finish_gradient_reduction();
  for (auto& c : chunks_) sum_replicated_gradients(tp_, c->store());
  sum_tied_gradients(ties_, chunks_, *groups_);
  // the loss: summed over the microbatches, DP replicas and CP ranks of the stage holding the last
  // virtual stage (TP rank 0): the last stage, or stage 0 in ZB-V's V
  const bool counts = o_.holds_loss(mesh_.stage()) && mesh_.coord().tp == 0;
  r.loss = mesh_.world().all_reduce_value(faults().loss(counts ? stage.loss : 0.0));
  if (const int experts = model_experts(model_); experts > 0) {
    const ExpertFigures e =
        expert_figures(mesh_.world(), chunks_, mesh_.coord().tp == 0, model_.layers(), experts);
    r.aux_loss = e.aux_loss;
    r.expert_load = e.expert_load;
  }
  const double before_optimizer = detail::now_seconds();
  if (apply) optimizer(r);
  r.seconds = detail::now_seconds() - r.origin;
  r.optimizer_seconds = r.origin + r.seconds - before_optimizer;
  flight_recorder().end_step_log();
  return r;
}

template <class M, class T, class S, class B>
void Trainer<M, T, S, B>::optimizer(StepResult& r) {
  const double squares = counted_gradient_squares<B, S>(chunks_, ties_, mesh_.coord().tp);
  r.grad_norm = std::sqrt(mesh_.world().all_reduce_value(faults().squares(squares)));
  r.lr = o_.optimizer.lr_at(step_);
  ++step_;  // AdamW's step t counts from 1
  r.skipped = !update_parameters(chunks_, o_, step_, r.lr, r.loss, r.grad_norm);
}

}  // namespace trident
