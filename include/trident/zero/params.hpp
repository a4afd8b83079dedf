// trident/zero/params.hpp: a model's parameters as the training machinery sees them, for any
// model — each parameter's name, global shape, placement over tensor parallelism, initialiser
// and weight decay, grouped into units and laid out on one tensor-parallel rank.
//
// A unit is the granule of ZeRO (unit_store.hpp): a group of parameters stored in one flat
// buffer, partitioned over DP, gathered and reduced together; hence this header sits in zero/,
// below the models that declare units (ARCHITECTURE §3, §4). A model declares its units per virtual
// stage (model/model.hpp); the names are the model's own (they key checkpoints and weight files).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../nn/init.hpp"
#include "../tensor/sharded_tensor.hpp"

namespace trident {

struct ParamSpec {
  std::string name;                 // the model's name, e.g. "h.3.attn.c_attn.weight"
  std::vector<std::int64_t> shape;  // global shape
  Placement tp;                     // placement over the tensor-parallel axis
  std::int64_t padded = 0;          // padded extent of the sharded dimension (vocab), 0 = none
  Init init = Init::normal;         // read by the model's initial_value
  bool decay = true;                // AdamW weight decay: weights yes, biases and norms' gains no
};

struct UnitSpec {
  std::string name;
  std::vector<ParamSpec> params;
};

// --- one unit on one TP rank ---------------------------------------------------------------

struct LocalParam {
  ParamSpec spec;
  ShardLayout layout;      // this rank's block of the global tensor
  std::size_t offset = 0;  // in the unit's flat buffer
  std::size_t numel = 0;   // local elements, padding included
  bool tp_replicated() const { return !spec.tp.is_shard(); }
};

struct UnitLayout {
  std::string name;
  std::vector<LocalParam> params;
  std::size_t numel = 0;  // sum of the local params
  // How often the stage reads the unit's parameters per microbatch in its forward and in its
  // backward (ZeRO-3 gathers it that often; train/formulas.hpp), set by the stage.
  int forward_reads = 1, backward_reads = 1;

  const LocalParam& find(const std::string& param) const {
    for (const LocalParam& p : params)
      if (p.spec.name == param) return p;
    fail("unit " + name + " has no parameter " + param);
  }
};

// Parameter `param` of unit `u` as a sharded view into the unit's flat buffer `base` (the
// store's params(), or grads() for its gradient): what the tensor-parallel layers take.
template <class T>
ShardedView<T> param_view(const UnitLayout& u, const std::string& param, T* base) {
  const LocalParam& p = u.find(param);
  return {base + p.offset, p.layout};
}

inline UnitLayout layout_unit(const UnitSpec& unit, int tp_size, int tp_rank) {
  UnitLayout u{unit.name, {}, 0};
  for (const ParamSpec& s : unit.params) {
    ShardLayout l(s.shape, s.tp, tp_size, tp_rank, s.padded);
    const auto n = static_cast<std::size_t>(l.local_numel());
    u.params.push_back({s, l, u.numel, n});
    u.numel += n;
  }
  return u;
}

// Writes the initial values of this rank's block of every parameter into `out` (unit numel):
// initial_value(spec, global element index) -> double, a pure function (nn/init.hpp).
template <class T, class InitialValue>
void initialise_unit(const UnitLayout& u, InitialValue&& initial_value, T* out) {
  for (const LocalParam& p : u.params)
    fill_local(p.layout, out + p.offset, [&](std::int64_t g) {
      return initial_value(p.spec, static_cast<std::uint64_t>(g));
    });
}

}  // namespace trident
