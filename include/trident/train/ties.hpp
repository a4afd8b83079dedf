// trident/train/ties.hpp: a model's tied parameters (model/model.hpp, Tie) checked against the
// run and located on this rank.
//
// Both copies of a tie must be the same tensor: the same parameters, shapes and placements
// (else one Error naming both, the same on every rank: each rank checks every tie from the
// model's declarations, not from what it holds). A layer whose halves lie on two virtual stages
// (a stage boundary inside it, nn/block_halves.hpp) is tied too: each copy takes its half's
// gradients, the sum is the layer's. After the last backward the copies' gradients are summed
// where they live (sum_tied_gradients) — here when both virtual stages are on this rank, else
// between the two pipeline ranks. The first copy is the one counted (gradient norm, checkpoint,
// collect).
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "../backend/device_buffer.hpp"
#include "../backend/ops.hpp"
#include "../core/message_tags.hpp"
#include "../mesh/device_mesh.hpp"
#include "options.hpp"

namespace trident {

// Virtual stage g of a run whose virtual stages hold `split` half layers (train/options.hpp,
// layer_split): half 2l is layer l's first half (attention), 2l + 1 its second (the MLP).
inline StageSpec stage_spec(const std::vector<int>& split, int g) {
  const int begin = std::accumulate(split.begin(), split.begin() + g, 0), end = begin + split[g];
  StageSpec s{g, static_cast<int>(split.size()), begin / 2, (end + 1) / 2 - begin / 2};
  s.from_second_half = begin % 2 == 1;
  s.to_first_half = end % 2 == 1;
  return s;
}

// A tie as this rank sees it: for each copy, this rank's chunk holding it and its unit there
// (-1 when the copy lives on another rank).
struct LocalTie {
  Tie tie;
  int chunk = -1, unit = -1, other_chunk = -1, other_unit = -1;
  int peer = -1;  // the pipeline rank holding the other copy, when one copy is here alone
  // this rank and peer are the first and the last pipeline rank: the sum runs over their
  // embedding group (mesh/mesh.hpp); else over the pipeline group
  bool over_embedding_group = false;
  bool on_this_rank() const { return chunk >= 0 && other_chunk >= 0; }
};

namespace detail {
inline std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + "]";
}
inline std::string unit_text(const UnitSpec& u) {
  std::string s;
  for (const ParamSpec& p : u.params)
    s += (s.empty() ? "" : ", ") + p.name + " " + shape_text(p.shape) + " " + p.tp.to_string();
  return s;
}
template <class M>
UnitSpec tied_unit(const M& model, const std::vector<int>& split, int stage,
                   const std::string& name, int tp) {
  const int stages = static_cast<int>(split.size());
  require(stage >= 0 && stage < stages, "tie of '" + name + "': virtual stage " +
                                            std::to_string(stage) + " is not in [0, " +
                                            std::to_string(stages) + ")");
  for (const UnitSpec& u : model.units(stage_spec(split, stage), tp))
    if (u.name == name) return u;
  fail("tie of '" + name + "': virtual stage " + std::to_string(stage) + " has no unit '" + name +
       "'");
}
}  // namespace detail

// The model's ties, and those of each layer split between two virtual stages: its units, as a
// middle stage running that layer alone holds them, on both stages.
template <class M>
std::vector<Tie> all_ties(const M& model, const std::vector<int>& split, int tp) {
  const int stages = static_cast<int>(split.size());
  std::vector<Tie> out = model.ties(stages);
  for (int g = 0; g + 1 < stages; ++g) {
    const StageSpec s = stage_spec(split, g);
    if (!s.to_first_half) continue;
    for (const UnitSpec& u : model.units(StageSpec{1, 3, s.first_layer + s.layers - 1, 1}, tp))
      out.push_back(tie(u.name, g, g + 1));
  }
  return out;
}

// Checks every tie of the model; returns them located on the rank of pipeline stage `stage`,
// whose chunks hold the virtual stages `map` gives (pp/placement.hpp).
template <class M>
std::vector<LocalTie> locate_ties(const M& model, const std::vector<int>& split, int tp,
                                  const pp::ChunkMap& map, int stage) {
  std::vector<LocalTie> out;
  for (const Tie& t : all_ties(model, split, tp)) {
    const UnitSpec a = detail::tied_unit(model, split, t.stage, t.unit, tp),
                   b = detail::tied_unit(model, split, t.other_stage, t.other_unit, tp);
    bool same = a.params.size() == b.params.size();
    for (std::size_t k = 0; same && k < a.params.size(); ++k)
      same = a.params[k].shape == b.params[k].shape && a.params[k].padded == b.params[k].padded &&
             a.params[k].tp.to_string() == b.params[k].tp.to_string();
    const std::string both = "'" + t.unit + "' of virtual stage " + std::to_string(t.stage) + " (" +
                             detail::unit_text(a) + ") and '" + t.other_unit +
                             "' of virtual stage " + std::to_string(t.other_stage) + " (" +
                             detail::unit_text(b) + ")";
    require(same, "cannot tie " + both + ": their shapes or placements differ");
    if (t.stage == t.other_stage) continue;  // one copy: the model declares it once
    LocalTie l{t};
    auto locate = [&](int g, const std::string& name, int& chunk, int& unit) {
      if (map.rank(g) != stage) return;
      chunk = map.chunk(g);
      const std::vector<UnitSpec> units = model.units(stage_spec(split, g), tp);
      for (int u = 0; u < static_cast<int>(units.size()); ++u)
        if (units[u].name == name) unit = u;
    };
    locate(t.stage, t.unit, l.chunk, l.unit);
    locate(t.other_stage, t.other_unit, l.other_chunk, l.other_unit);
    if (l.chunk >= 0 && l.other_chunk < 0) l.peer = map.rank(t.other_stage);
    if (l.chunk < 0 && l.other_chunk >= 0) l.peer = map.rank(t.stage);
    l.over_embedding_group =
        l.peer >= 0 && std::min(stage, l.peer) == 0 && std::max(stage, l.peer) == map.stages - 1;
    out.push_back(l);
  }
  return out;
}

// Whether unit u of chunk c is the second copy of a tie (the first is the one counted).
inline bool tied_copy(const std::vector<LocalTie>& ties, int c, int u) {
  for (const LocalTie& t : ties)
    if (t.other_chunk == c && t.other_unit == u) return true;
  return false;
}

// Sums the DP-reduced gradients of each tie's copies (ARCHITECTURE §2, step 4), chunks[c] being
// this rank's chunk c (its store() a UnitStore, zero/unit_store.hpp): here when both copies are
// on this rank; over the embedding group (Megatron's, mesh/mesh.hpp) when they are on the first and
// the last pipeline rank; else with the pipeline rank holding the other (a layer split between
// neighbours), each side adding the other's copy to its own. Either way the two copies stay
// bitwise equal (floating-point addition is commutative).
template <class B, class Chunks>
void sum_tied_gradients(const std::vector<LocalTie>& ties, Chunks& chunks,
                        const DeviceMesh<B>& groups) {
  for (const LocalTie& t : ties) {
    if (t.on_this_rank()) {  // one sum, the same in both copies
      const auto a = chunks[t.chunk]->store().reduced_grads(t.unit),
                 b = chunks[t.other_chunk]->store().reduced_grads(t.other_unit);
      backend::sum_both<B>(a.data(), b.data(), a.size());
      continue;
    }
    if (t.peer < 0) continue;  // neither copy here
    const bool first = t.chunk >= 0;
    const auto mine = chunks[first ? t.chunk : t.other_chunk]->store().reduced_grads(
        first ? t.unit : t.other_unit);
    if (t.over_embedding_group) {
      groups.embedding().all_reduce(mine.data(), mine.size());
      continue;
    }
    using S = std::remove_pointer_t<decltype(mine.data())>;
    backend::DeviceBuffer<S, B> theirs(MemoryKind::buffers, mine.size(), Fill::none);
    groups.pp().exchange(mine.data(), theirs.data(), mine.size(), t.peer,
                         message_tags::kTiedGradients);
    // a + b == b + a: the same on both sides
    backend::accumulate<B>(mine.data(), theirs.data(), mine.size());
  }
}

}  // namespace trident
