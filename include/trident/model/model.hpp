// trident/model/model.hpp: the model interface — what a model gives the trainer, for any model.
//
// The training step (train/trainer.hpp: pipeline executor, ZeRO store and policy, sequence-
// parallel gradient sums, tied-parameter sums, global-norm clipping, AdamW, mixed precision) is
// generic over a Model type M and a backend B (backend/cpu/cpu.hpp); it knows a model only
// through the members below. GPT-2 (models/gpt2/) is one such model.
//
// Defining a model (a host app):
//
//   struct MyModel {
//     // (a) parameters: the ZeRO units of virtual stage s in the order the stage first reads
//     //     them, as this rank's tensor-parallel size sees them (zero/params.hpp: name, global
//     //     shape, placement Replicate or Shard(dim) over TP, padding, init, weight decay). The
//     //     element type is the trainer's T (compute) and S (storage).
//     std::vector<UnitSpec> units(const StageSpec& s, int tp) const;
//     double initial_value(const ParamSpec& p, std::uint64_t index) const;  // pure: any mesh
//     // (b) the pipeline split: layers to spread over the virtual stages, and the forward
//     //     cost of one sequence per layer, embedding and head (--pp-layers auto); with the
//     //     cost of a layer's first half, a stage boundary may also fall between a layer's
//     //     halves (its Stage then runs the halves StageSpec::halves names).
//     int layers() const;
//     pp::StageCosts stage_costs() const;  // pp/balance.hpp
//     // (c) the per-stage object: forward and backward of one microbatch (below), on any
//     //     backend B the model supports (every pointer it is given is in B's memory).
//     template <class T, class S, class B> using Stage = ...;
//     // (d) tied parameters, declared: the trainer sums the copies' gradients and counts the
//     //     tensor once (norm, checkpoint, collect). Empty when nothing is tied.
//     std::vector<Tie> ties(int virtual_stages) const;  // e.g. {tie("wte", 0, stages - 1)}
//     // the data and the checks
//     int seq() const;    // tokens per sequence
//     int vocab() const;  // token ids are < vocab
//     void validate(const ModelRun& run) const;  // dims vs TP etc.: throws trident::Error
//     ModelDescription describe() const;  // the architecture as named integers (checkpoints
//                                         // store it and compare it on load)
//     // optional: its tensor-parallel collectives, for the run report's TP formula
//     // (train/formulas.hpp; without it the report prints "not declared", never another
//     // model's), e.g. Megatron's block: {4, 2, true}
//     static constexpr TpCollectives kTpCollectives = {...};
//     // optional: the elements of T one layer keeps per microbatch for its backward, for the
//     // run report's activation formula (printed next to what a layer's forward measurably
//     // keeps, after selective recomputation's drop when run.recompute is selective; without
//     // it, "not declared")
//     double layer_activation_elements(const ModelRun&) const;
//     // optional: its weight files in another framework's layout (io/file_layout.hpp), e.g.
//     // Llama's in Hugging Face's; without it, each parameter is a tensor of its own name
//     std::vector<FileTensor> file_tensors(const ParamSpec&) const;
//     // optional: the model's Stage splits its sequences over a context-parallel ring
//     // (cp/: the parts read tp.local_seq, tp.positions and run cp/attention.hpp); without
//     // it, --cp above 1 is refused
//     static constexpr bool kContextParallel = true;
//   };
//
// M::Stage<T, S, B> is constructed once per virtual stage this rank holds as
//     Stage(const M&, const TensorParallel<B>&, const StageSpec&, int rows_per_microbatch,
//           const backend::DeviceComm<B>& dp, ZeroPolicy, Recompute)
// owns the stage's UnitStore (zero/unit_store.hpp) built from M::units, and has
//     UnitStore<T, S, B>& store();   const StageSpec& spec() const;
//     std::size_t activation_size() const;  // elements handed to the next stage per microbatch
//     double forward(int mb, const Microbatch&, const T* input, T* output, T scale);
//         // input null on the first virtual stage, output null on the last; returns the
//         // microbatch's summed loss times scale on the last virtual stage, 0 elsewhere
//     void backward(int mb, const Microbatch&, const T* doutput, T* dinput, T scale, bool last,
//                   nn::BackwardPart part);
//         // part: both (fused), input (zero-bubble's B) or weight (W); last: the step's last
//         // weight-gradient pass of this stage (its units' DP reductions start)
// and, for evaluation and sampling (train/evaluate.hpp, train/sample.hpp: forward only, no
// gradients; ZeRO-3 still gathers the parameters):
//     double forward_only(const Microbatch&, const T* input, T* output, T scale);
//         // as forward, keeping nothing for a backward
//     void forward_logits(const Microbatch&, const T* input, T* output, int position, T* logits);
//         // as forward_only; the last virtual stage writes the next-token logits (vocab, host
//         // memory) after token `position` of row 0, the same on every TP rank
// A decoder-only transformer need not write a Stage: model/decoder_stage.hpp is one, generic
// over the model's Embedding, Block and Head (it keeps the per-microbatch stash, the unit
// order, ZeRO's gather/prefetch/release and the launch of the DP gradient reduction, recomputation
// and the B/W split).
//
// The stage contract: which pointers a pass gives (every one in B's memory; "-": null).
//
//   Stage::             input     output    doutput   dinput
//   forward, forward_*  not first not last  .         .
//   backward both/B     .         .         not last  not first
//   backward W          .         .         -         -          (doutput, dinput: not read)
//
//   DecoderStage part:  w (parameters)         g (gradients, accumulate)  dx / x
//   Embedding forward   w[i] given             .                          x written
//   Embedding backward  no w                   g[i] given                 dx given (read)
//   Block/Head forward  w given                .                          .
//   backward both       w given                g given                    dx given (written)
//   backward B (input)  w given                g given (cheap ones: norms) dx given (written)
//   backward W (weight) w null: w[i] == null   g given                    dx null (Block, Head)
//
// The W pass of the zero-bubble schedules (Qi et al. 2023) reads no parameter: ZeRO-3 has not
// gathered them, so a part's W must not touch w (the Head gets an array whose entries are null,
// the Block a null w). A part that reads a null pointer here dies with a message naming the
// model, the part and the pass (model/stage_contract.hpp), not a bare segmentation fault; the
// parity kit (testing/parity.hpp) runs every schedule, so a model tested with it meets this first.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "../nn/block_halves.hpp"
#include "../plan/recompute.hpp"
#include "../pp/balance.hpp"
#include "../zero/params.hpp"

namespace trident {

// Virtual stage `index` of `count` (PP x virtual stages) and the layers it runs. A stage
// boundary may fall between a layer's halves (nn/block_halves.hpp): then the first layer runs
// only its second half (from_second_half) or the last only its first (to_first_half), and both
// stages hold that layer's units (tied, train/ties.hpp).
struct StageSpec {
  int index = 0, count = 1;
  int first_layer = 0, layers = 0;  // layers [first_layer, first_layer + layers), whole or half
  bool from_second_half = false, to_first_half = false;
  bool first() const { return index == 0; }         // embeds the data
  bool last() const { return index == count - 1; }  // computes the loss
  // The halves the stage runs of its l-th layer (0 <= l < layers).
  nn::BlockHalves halves(int l) const {
    if (l == 0 && from_second_half) return nn::BlockHalves::mlp;
    if (l == layers - 1 && to_first_half) return nn::BlockHalves::attention;
    return nn::BlockHalves::both;
  }
};

// A model's architecture as named integers, e.g. {"layers": 4, "hidden": 64, ...}.
using ModelDescription = std::map<std::string, std::int64_t>;

// What a model checks itself against (validate): the run's tensor parallelism and microbatch;
// and what its layer keeps (layer_activation_elements) under the run's recomputation.
struct ModelRun {
  int tp = 1;
  bool sequence_parallel = false;
  int rows = 1;                           // sequences per microbatch
  int cp = 1;                             // context-parallel ranks sharing each sequence
  Recompute recompute = Recompute::none;  // selective: the attention probabilities not kept
};

// A model's tensor-parallel collectives (kTpCollectives, above), in the units of the papers:
// calls on an activation-sized (b s h) buffer.
struct TpCollectives {
  int per_layer = 0;   // per layer and microbatch, forward and backward together
  int recomputed = 0;  // more per layer with full recomputation (the forward's again)
  // the vocab-parallel embedding's g (forward) and head's f (backward), one b s h each, and
  // the vocab-parallel cross-entropy's all-reduces of 3 b s (tp/vocab_parallel.hpp)
  bool vocab_parallel_ends = false;
};
template <class M, class = void>
struct declares_tp_collectives : std::false_type {};
template <class M>
struct declares_tp_collectives<M, std::void_t<decltype(M::kTpCollectives)>> : std::true_type {};

// Whether M declares kContextParallel (above): its Stage runs under a context-parallel ring.
template <class M, class = void>
struct supports_context_parallel : std::false_type {};
template <class M>
struct supports_context_parallel<M, std::void_t<decltype(M::kContextParallel)>>
    : std::bool_constant<M::kContextParallel> {};

// Whether M declares its activations per layer (above: layer_activation_elements).
template <class M, class = void>
struct declares_activation_formula : std::false_type {};
template <class M>
struct declares_activation_formula<
    M, std::void_t<decltype(std::declval<const M&>().layer_activation_elements(ModelRun{}))>>
    : std::true_type {};

// Unit `unit` of virtual stage `stage` and unit `other_unit` of virtual stage `other_stage` are
// one tensor (Press & Wolf 2017): their gradients are summed, the first is the one counted.
// Same stage: the model declares the unit once there and the tie is a no-op.
struct Tie {
  std::string unit;
  int stage = 0;
  std::string other_unit;
  int other_stage = 0;
};
inline Tie tie(const std::string& unit, int stage, int other_stage) {
  return {unit, stage, unit, other_stage};
}

// Every unit of the model once, in order: its units as one stage on one rank would hold them.
template <class M>
std::vector<UnitSpec> whole_model_units(const M& model) {
  return model.units(StageSpec{0, 1, 0, model.layers()}, 1);
}

// Compile-time checks of the members the trainer calls, by the detection idiom: a missing or
// mistyped member makes its trait false and the static_assert prints its sentence (the
// Trainer checks them before it names any member: train/trainer.hpp). The Stage's are checked
// where it is built.
namespace model_check {
template <class M, class = void>
struct units : std::false_type {};
template <class M>
struct units<
    M, std::enable_if_t<std::is_same_v<decltype(std::declval<const M&>().units(StageSpec{}, 1)),
                                       std::vector<UnitSpec>>>> : std::true_type {};
template <class M, class = void>
struct initial_value : std::false_type {};
template <class M>
struct initial_value<
    M,
    std::enable_if_t<std::is_convertible_v<
        decltype(std::declval<const M&>().initial_value(ParamSpec{}, std::uint64_t(0))), double>>>
    : std::true_type {};
template <class M, class = void>
struct ties : std::false_type {};
template <class M>
struct ties<M, std::enable_if_t<
                   std::is_same_v<decltype(std::declval<const M&>().ties(1)), std::vector<Tie>>>>
    : std::true_type {};
template <class M, class = void>
struct stage_costs : std::false_type {};
template <class M>
struct stage_costs<M, std::enable_if_t<std::is_same_v<
                          decltype(std::declval<const M&>().stage_costs()), pp::StageCosts>>>
    : std::true_type {};
template <class M, class = void>
struct sizes : std::false_type {};
template <class M>
struct sizes<
    M, std::enable_if_t<std::is_convertible_v<decltype(std::declval<const M&>().layers()), int> &&
                        std::is_convertible_v<decltype(std::declval<const M&>().seq()), int> &&
                        std::is_convertible_v<decltype(std::declval<const M&>().vocab()), int>>>
    : std::true_type {};
template <class M, class = void>
struct validate : std::false_type {};
template <class M>
struct validate<
    M, std::enable_if_t<std::is_void_v<decltype(std::declval<const M&>().validate(ModelRun{}))>>>
    : std::true_type {};
template <class M, class = void>
struct describe : std::false_type {};
template <class M>
struct describe<M, std::enable_if_t<std::is_same_v<decltype(std::declval<const M&>().describe()),
                                                   ModelDescription>>> : std::true_type {};
template <class M, class T, class S, class B, class = void>
struct stage : std::false_type {};
template <class M, class T, class S, class B>
struct stage<M, T, S, B, std::void_t<typename M::template Stage<T, S, B>>> : std::true_type {};
}  // namespace model_check

// A base of Trainer<M, T, S, B> (so that its sentences come before any other error about M).
template <class M, class T, class S, class B>
struct CheckedModel {
  static_assert(model_check::units<M>::value,
                "a Model needs std::vector<UnitSpec> units(const StageSpec&, int tp) const");
  static_assert(model_check::initial_value<M>::value,
                "a Model needs double initial_value(const ParamSpec&, std::uint64_t) const");
  static_assert(model_check::ties<M>::value,
                "a Model needs std::vector<Tie> ties(int virtual_stages) const");
  static_assert(model_check::stage_costs<M>::value,
                "a Model needs pp::StageCosts stage_costs() const");
  static_assert(model_check::sizes<M>::value,
                "a Model needs int layers(), int seq() and int vocab() const");
  static_assert(model_check::validate<M>::value,
                "a Model needs void validate(const ModelRun&) const");
  static_assert(model_check::describe<M>::value, "a Model needs ModelDescription describe() const");
  static_assert(model_check::stage<M, T, S, B>::value,
                "a Model needs template <class T, class S, class B> using Stage = ... (a decoder: "
                "derive from DecoderModel, model/decoder_model.hpp)");
};

}  // namespace trident
