// trident/model/decoder_model.hpp: the members of model/model.hpp that every decoder-only model
// built on DecoderStage writes the same way, written once (CRTP).
//
//   class Model : public DecoderModel<Model, Config, Embedding, Block, Head> { ... };
//
// gives the model its config, its Stage (DecoderStage, on any backend), layers(), seq(), vocab(),
// the units of a virtual stage (decoder_units over the parts' units: Embedding<T, B>::units(
// config, tp), block_unit(config, layer) found in the config's namespace, Head<T, B>::units(
// config, tp)), and check_activation_size for validate(). The parts are templates over the
// compute type T and the backend B: one composition of each, used by every backend. The model adds
// what is its own: initial_value, ties, stage_costs, validate and describe.
#pragma once

#include <string>
#include <vector>

#include "decoder_stage.hpp"

namespace trident {

template <class Derived, class Config, template <class, class> class EmbeddingPart,
          template <class, class> class BlockPart, template <class, class> class HeadPart>
class DecoderModel {
 public:
  DecoderModel() = default;
  explicit DecoderModel(const Config& c) : c_(c) {}
  const Config& config() const { return c_; }

  // --- model/model.hpp ---------------------------------------------------------------------
  template <class T, class S = T, class B = backend::Cpu>
  using Stage = DecoderStage<Derived, T, S, B>;
  int layers() const { return c_.layers; }
  int seq() const { return c_.seq; }
  int vocab() const { return c_.vocab; }
  std::vector<UnitSpec> units(const StageSpec& s, int tp) const {
    return decoder_units(static_cast<const Derived&>(*this), s, tp).units;
  }

  // --- model/decoder_stage.hpp ---------------------------------------------------------------
  template <class T, class B>
  using Embedding = EmbeddingPart<T, B>;
  template <class T, class B>
  using Block = BlockPart<T, B>;
  template <class T, class B>
  using Head = HeadPart<T, B>;
  std::vector<UnitSpec> embedding_units(int tp) const {
    return Embedding<float, backend::Cpu>::units(c_, tp);
  }
  UnitSpec layer_unit(int layer) const { return block_unit(c_, layer); }
  std::vector<UnitSpec> head_units(int tp) const {
    return Head<float, backend::Cpu>::units(c_, tp);
  }

 protected:
  // A microbatch's widest activation, rows x seq x `wide` elements, must travel in one MPI
  // call, whose counts are int.
  void check_activation_size(const ModelRun& run, long long wide) const {
    auto s = [](long long v) { return std::to_string(v); };
    const long long rows = run.rows, seq = c_.seq;
    require(rows * seq * wide <= 2147483647LL, "a microbatch's activations (" + s(rows) +
                                                   " sequences x " + s(seq) + " tokens x " +
                                                   s(wide) + ") have more than 2^31 - 1 elements");
  }

  Config c_;
};

}  // namespace trident
