// trident/train/evaluate.hpp: the loss on held-out data, forward only.
//
// Evaluation batch k (0 <= k < batches) is the global batch that step k would sample from the
// held-out source (TokenSource::split_tail): the same rows on every mesh, and the same batches
// at every evaluation, so validation losses are comparable along a run. Each batch is split
// over DP and microbatches as a training step is and runs the forward-only pipeline schedule
// (pp/schedule.hpp): no gradients, no optimizer, no gradient reductions; ZeRO-3 still gathers
// each unit's parameters over DP for its use. The result is the mean cross-entropy over all the
// batches' tokens, summed as the training loss is (train/trainer.hpp, step 5).
#pragma once

#include <vector>

#include "../core/error.hpp"
#include "../core/stats.hpp"
#include "../pp/executor.hpp"
#include "trainer.hpp"

namespace trident {

// What a forward-only schedule calls (pp/executor.hpp); `run` does one compute action.
template <class T, class Run>
struct ForwardOnlyStage {
  Run run;
  void forward(int mb, int chunk, const T* input, T* output) { run(mb, chunk, input, output); }
  void backward(int, int, const T*, T*, nn::BackwardPart, bool) {
    fail("a forward-only pipeline schedule ran a backward");
  }
};

// Runs `microbatches` microbatches through this rank's chunks with the forward-only schedule.
// Collective over the whole mesh. The communication is not counted in comm_stats() (the
// training report's traffic per step is the training step's).
template <class M, class T, class S, class B, class Run>
void run_forward_only(Trainer<M, T, S, B>& t, int microbatches, Run&& run) {
  const CommStats counted = comm_stats();
  const TrainOptions& o = t.options();
  const pp::ChunkMap map = o.chunk_map();  // the training schedule's placement
  const auto schedule = pp::make_schedule(
      {pp::ScheduleKind::forward_only, o.mesh.pp, microbatches, o.virtual_stages, map.placement});
  pp::Executor<T, B> executor(t.device_mesh().pp(), schedule[t.mesh().stage()], microbatches,
                              o.virtual_stages, t.chunk(0).activation_size(), false, map.placement);
  ForwardOnlyStage<T, Run&> stage{run};
  executor.run(stage, detail::now_seconds());
  for (int c = 0; c < t.chunks(); ++c) t.chunk(c).store().end_step();  // ZeRO-3's gathered copies
  comm_stats() = counted;
}

// Mean loss over the tokens of `batches` global batches of held_out. Collective; the same
// value on every rank.
template <class M, class T, class S, class B>
[[nodiscard]] double evaluate(Trainer<M, T, S, B>& t, const TokenSource& held_out, int batches) {
  require(batches >= 1, "evaluation needs at least 1 batch, got " + std::to_string(batches));
  const TrainOptions& o = t.options();
  const int seq = t.model().seq(), m = o.microbatches, b = o.rows_per_microbatch();
  const T scale = T(1) / (T(o.batch) * T(seq));  // 1 / tokens of one global batch
  double sum = 0;                                // this rank's share of the batches' losses
  for (int k = 0; k < batches; ++k) {
    const std::vector<Microbatch> micro =
        replica_microbatches(held_out, o.data_seed, k, t.mesh().coord().dp, m, b, seq, t.tp().cp);
    run_forward_only(t, m, [&](int mb, int c, const T* in, T* out) {
      sum += t.chunk(c).forward_only(micro[mb], in, out, scale);
    });
  }
  // summed over the microbatches, DP replicas and CP ranks of the loss's stage (TP rank 0), as
  // in step()
  const bool counts = o.holds_loss(t.mesh().stage()) && t.mesh().coord().tp == 0;
  return t.mesh().world().all_reduce_value(counts ? sum : 0.0) / batches;
}

}  // namespace trident
