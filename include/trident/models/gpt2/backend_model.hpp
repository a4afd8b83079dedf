// trident/models/gpt2/backend_model.hpp: GPT-2 with its stage written against a backend type B,
// as a model of model/model.hpp: gpt2::Model's units, initialisation, ties, costs and
// description, with the parts of models/gpt2/backend_block.hpp and backend_ends.hpp in the
// generic DecoderStage, so the trainer (train/trainer.hpp), the pipeline schedules and the ZeRO
// policies drive it unchanged: trident::Trainer<gpt2::BackendModel<backend::Cpu>, T, S>.
//
// The DecoderStage and the UnitStore hold host memory (ZeRO's shards, MPI's buffers, the
// pipeline's activations), so the trainer runs it with a backend whose pointers are host memory
// (kHostMemory: backend::Cpu); a device backend runs the same parts through
// models/gpt2/backend_gpt.hpp (one rank, parameters and AdamW in device memory). Tensor
// parallelism without SP (validate refuses SP) and the fused backward only (the parts refuse a
// zero-bubble B/W split).
#pragma once

#include <string>
#include <type_traits>

#include "backend_block.hpp"
#include "backend_ends.hpp"
#include "model.hpp"

namespace trident::gpt2 {

template <class B>
class BackendModel : public Model {
 public:
  // The stage's buffers are the host's (BlockCache) memory: B's must be too. (A backend may
  // allocate host memory and still say kHostMemory = false, so that its collectives take the
  // host-staging path: the tests' stand-in for a device.)
  static_assert(std::is_base_of_v<trident::detail::HostMemory, B>,
                "the trainer's stage holds host memory: use a backend with host memory here");
  using Model::Model;

  // --- model/model.hpp: the stage, with the backend's parts ------------------------------
  template <class T, class S = T>
  using Stage = DecoderStage<BackendModel, T, S>;
  template <class T>
  using Embedding = BackendEmbedding<T, B>;
  template <class T>
  using Block = BackendBlock<T, B>;
  template <class T>
  using Head = BackendHead<T, B>;

  // gpt2::Model's costs, but its blocks run whole (no stage boundary between their halves).
  pp::StageCosts stage_costs() const {
    pp::StageCosts c = Model::stage_costs();
    c.first_half = 0;
    return c;
  }

  void validate(const ModelRun& run) const {
    Model::validate(run);
    require(!run.sequence_parallel, "the " + std::string(B::kName) +
                                        " backend's GPT-2 stage has no sequence parallelism yet");
  }
};

}  // namespace trident::gpt2
