// trident/train/ties.hpp: a model's tied parameters (model/model.hpp, Tie) checked against the
// run and located on this rank.
//
// Both copies of a tie must be the same tensor: the same parameters, shapes and placements
// (else one Error naming both, the same on every rank: each rank checks every tie from the
// model's declarations, not from what it holds). The trainer sums the copies' gradients where
// they live — here when both virtual stages are on this rank (PP = 1 with virtual stages),
// else over the embedding group (mesh/mesh.hpp), which joins the first and last pipeline
// ranks; a tie between other ranks is refused. The first copy is the one counted (gradient
// norm, checkpoint, collect).
#pragma once

#include <string>
#include <vector>

#include "options.hpp"

namespace trident {

// Virtual stage g of a run whose virtual stages hold `split` layers.
inline StageSpec stage_spec(const std::vector<int>& split, int g) {
  return {g, static_cast<int>(split.size()), std::accumulate(split.begin(), split.begin() + g, 0),
          split[g]};
}

// A tie as this rank sees it: for each copy, this rank's chunk holding it and its unit there
// (-1 when the copy lives on another rank).
struct LocalTie {
  Tie tie;
  int chunk = -1, unit = -1, other_chunk = -1, other_unit = -1;
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

// Checks every tie of the model; returns them located on the rank of pipeline stage `stage`,
// whose chunks hold the virtual stages `map` gives (pp/placement.hpp).
template <class M>
std::vector<LocalTie> locate_ties(const M& model, const std::vector<int>& split, int tp,
                                  const pp::ChunkMap& map, int stage) {
  const int p = map.stages;
  std::vector<LocalTie> out;
  const int stages = static_cast<int>(split.size());
  for (const Tie& t : model.ties(stages)) {
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
    const int ra = map.rank(t.stage), rb = map.rank(t.other_stage);
    require(ra == rb || (std::min(ra, rb) == 0 && std::max(ra, rb) == p - 1),
            "cannot tie " + both +
                ": tied copies must be on one pipeline rank or on the first "
                "and the last (ranks " +
                std::to_string(ra) + " and " + std::to_string(rb) + ")");
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
    out.push_back(l);
  }
  return out;
}

}  // namespace trident
