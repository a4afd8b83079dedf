// trident/train/options.hpp: everything that defines a training run but the model, and the
// run's checks (the model checks itself: model/model.hpp).
//
// Every check is a pure function of the options and the world size (and of the backend type and
// the token source's vocabulary), so each rank throws the same Error (ARCHITECTURE §6: bad input
// never hangs).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "../core/message_tags.hpp"
#include "../cp/context_parallel.hpp"
#include "../data/tokens.hpp"
#include "../mesh/mesh.hpp"
#include "../model/model.hpp"
#include "../optim/adamw.hpp"
#include "../plan/recompute.hpp"
#include "../pp/balance.hpp"
#include "../pp/schedule.hpp"
#include "../zero/policy.hpp"

namespace trident {

struct TrainOptions {
  MeshShape mesh;
  bool sequence_parallel = false;
  CpSplit cp_split = CpSplit::zigzag;  // how CP ranks share a sequence (cp/context_parallel.hpp)
  pp::ScheduleKind schedule = pp::ScheduleKind::one_f_one_b;
  int microbatches = 1;    // per DP replica per step
  int virtual_stages = 1;  // model chunks per pipeline rank (interleaved; zbv: 2)
  // layers per virtual stage, whole or ending in .5 (a stage boundary between a layer's
  // attention and MLP halves, nn/block_halves.hpp); empty = balanced by cost (auto)
  std::vector<double> pp_layers;
  Recompute recompute = Recompute::none;  // none, selective (the attention core) or full
  ZeroPolicy zero;
  int batch = 8;  // sequences in the global batch
  // The run's optimizer steps: the learning-rate schedule's length unless optimizer.steps is
  // set (optim/adamw.hpp); 0: unknown, the rate stays at optimizer.lr after any warm-up.
  int steps = 0;
  AdamW optimizer;
  std::uint64_t data_seed = 42;
  bool verbose = false;         // print every pipeline send and receive
  bool skip_nonfinite = false;  // skip a step whose loss or gradient norm is not finite

  int virtual_stage_count() const { return mesh.pp * virtual_stages; }
  // Which pipeline rank holds which virtual stage (pp/placement.hpp): looped, or ZB-V's V.
  pp::ChunkMap chunk_map() const {
    return {pp::traits(schedule).placement, mesh.pp, virtual_stages};
  }
  // Whether pipeline rank `stage` holds the last virtual stage (the LM head and the loss).
  bool holds_loss(int stage) const { return chunk_map().last_rank() == stage; }
  int rows_per_microbatch() const { return batch / (mesh.dp * microbatches); }
};

// Half layers of each virtual stage (half 2l is layer l's attention half, 2l + 1 its MLP half;
// model/model.hpp, StageSpec): the explicit split, or (`--pp-layers auto`) the one that
// balances the pipeline ranks' cost (each the sum of its chunks'), then each rank's chunks', the
// embedding and the LM head counted, with a stage boundary inside a layer where the model allows
// it and that is cheaper (pp/balance.hpp). The last virtual stage may hold 0 layers (the head
// alone).
template <class M>
std::vector<int> layer_split(const M& model, const TrainOptions& o) {
  const int stages = o.virtual_stage_count(), L = model.layers();
  const pp::StageCosts costs = model.stage_costs();
  auto s = [](long long v) { return std::to_string(v); };
  auto layer_count_text = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return std::string(text);
  };
  if (!o.pp_layers.empty()) {
    require(static_cast<int>(o.pp_layers.size()) == stages,
            "--pp-layers lists " + s(o.pp_layers.size()) + " stages, but the pipeline has " +
                s(stages) + " (PP x virtual stages)");
    std::vector<int> halves;
    for (double layers : o.pp_layers) {
      require(
          std::isfinite(layers) && layers >= 0 && layers * 2 == std::round(layers * 2),
          "--pp-layers: " + layer_count_text(layers) + " is not a whole or half number of layers");
      halves.push_back(static_cast<int>(std::lround(layers * 2)));
      require(halves.back() % 2 == 0 || costs.first_half > 0,
              "--pp-layers: " + layer_count_text(layers) +
                  " puts a stage boundary inside a layer, but this model's layers run whole");
    }
    const int total = std::accumulate(halves.begin(), halves.end(), 0);
    for (int g = 0; g + 1 < stages; ++g)
      require(halves[g] >= 1,
              "--pp-layers: every stage needs at least half a layer but the last, which may run "
              "the head alone (0)");
    require(total == 2 * L, "--pp-layers adds up to " + layer_count_text(total / 2.0) +
                                " layers, but the model has " + s(L));
    return halves;
  }
  require(stages <= L,
          "PP=" + s(o.mesh.pp) +
              (o.virtual_stages > 1 ? " x " + s(o.virtual_stages) + " virtual stages" : "") +
              " needs at least " + s(stages) + " layers, but the model has " + s(L));
  return pp::balanced_half_split(costs, L, o.chunk_map());
}

template <class M>
void validate(const M& model, const TrainOptions& o, int world_size) {
  auto s = [](long long v) { return std::to_string(v); };
  Mesh<>::validate(o.mesh, world_size);
  const int rows = o.microbatches >= 1 ? o.rows_per_microbatch() : o.batch;  // checked below
  model.validate(ModelRun{o.mesh.tp, o.sequence_parallel, rows, o.mesh.cp});
  if (o.mesh.cp > 1) {
    require(supports_context_parallel<M>::value,
            "context parallelism (--cp " + s(o.mesh.cp) +
                "): this model does not split its sequences over a ring (it declares no "
                "kContextParallel: model/model.hpp)");
    validate_cp_split(model.seq(), o.mesh.cp, o.cp_split);
  }
  require(o.virtual_stages >= 1, "--virtual-stages must be at least 1, got " + s(o.virtual_stages));
  const pp::ScheduleTraits& schedule = pp::traits(o.schedule);
  require(o.virtual_stages == 1 || schedule.max_chunks != 1,
          std::string("virtual stages need the interleaved or zbv schedule (") + schedule.name +
              " runs 1 model chunk per pipeline rank)");
  require(schedule.takes_chunks(o.virtual_stages),
          std::string(schedule.name) + " runs " + s(schedule.min_chunks) +
              " model chunks per pipeline rank" +
              (schedule.placement == pp::ChunkPlacement::v_shape ? ", placed in a V" : "") +
              ": --virtual-stages must be " + s(schedule.min_chunks) +
              (schedule.max_chunks == 0 ? " or more" : "") + " (got " + s(o.virtual_stages) + ")");
  require(!(o.recompute == Recompute::selective && o.mesh.cp > 1),
          "--recompute selective recomputes the attention core from each rank's kept q, k, v; "
          "under context parallelism (--cp " +
              s(o.mesh.cp) + ") that would rerun the ring: use --recompute none or full");
  require(!(o.recompute == Recompute::full && pp::traits(o.schedule).splits_backward),
          std::string(pp::to_string(o.schedule)) +
              " cannot honour --recompute: its W pass (weight gradients) runs after B and needs "
              "the block activations that full recomputation drops after B; use 1f1b with "
              "--recompute");
  layer_split(model, o);
  require(o.microbatches >= 1, "microbatches must be at least 1");
  pp::validate({o.schedule, o.mesh.pp, o.microbatches, o.virtual_stages});
  const long long tags = message_tags::pipeline_tags(o.virtual_stages, o.microbatches);
  require(o.mesh.pp == 1 || tags <= message_tags::kTiedGradients,
          "too many microbatches for the pipeline's message tags: 2 x " + s(o.virtual_stages) +
              " model chunks x " + s(o.microbatches) + " microbatches = " + s(tags) +
              " tags, at most " + s(message_tags::kTiedGradients) +
              " (the tied gradients' tag, core/message_tags.hpp)");
  require(o.batch >= 1, "the global batch must be at least 1 sequence");
  require(o.batch % (o.mesh.dp * o.microbatches) == 0,
          "the global batch of " + s(o.batch) + " sequences is not divisible by DP=" +
              s(o.mesh.dp) + " x " + s(o.microbatches) + " microbatches");
  o.zero.validate();
  char lr[32];
  std::snprintf(lr, sizeof lr, "%g", o.optimizer.lr);
  require(std::isfinite(o.optimizer.lr) && o.optimizer.lr > 0,
          std::string("the learning rate (--lr) must be a finite number > 0, got ") + lr);
}

// What the backend B and the token source allow of the run: ring attention's kernels are host
// code (cp/ring_attention.hpp), and every token id must be in the model's vocabulary.
template <class B, class M>
void validate_backend_and_data(const M& model, const TrainOptions& o, const TokenSource& data) {
  require(o.mesh.cp == 1 || B::kHostKernels,
          std::string("context parallelism: ring attention has no ") + B::kName +
              " kernel yet (--cp runs on the cpu and emulated backends)");
  require(data.vocab() <= model.vocab(),
          "the data '" + data.name() + "' has token ids up to " + std::to_string(data.vocab() - 1) +
              ", at or above the model's vocabulary of " + std::to_string(model.vocab()));
}

}  // namespace trident
