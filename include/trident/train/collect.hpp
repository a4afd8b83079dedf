// trident/train/collect.hpp: whole tensors, by the model's names, on world rank 0 — gathered
// over TP (the shards of each parameter), DP (ZeRO's shards) and PP (the stages) — for saving
// weights and dumping gradients.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "../core/message_tags.hpp"
#include "../tensor/redistribute.hpp"
#include "trainer.hpp"

namespace trident {

template <class T>
using NamedTensors = std::map<std::string, Matrix<T>>;

namespace detail {
// Moves stage s's tensors to stage 0 over the pipeline group (ranks with tp = dp = 0 only).
template <class T>
void send_to_first_stage(const Comm& pp, NamedTensors<T>& tensors) {
  for (int s = 1; s < pp.size(); ++s) {
    if (pp.rank() == s) {
      std::vector<std::int64_t> head{static_cast<std::int64_t>(tensors.size())};
      std::string names;
      std::vector<T> data;
      for (const auto& [name, m] : tensors) {
        head.insert(head.end(), {static_cast<std::int64_t>(name.size()), m.rows(), m.cols()});
        names += name;
        data.insert(data.end(), m.data(), m.data() + m.size());
      }
      std::int64_t sizes[3] = {static_cast<std::int64_t>(head.size()),
                               static_cast<std::int64_t>(names.size()),
                               static_cast<std::int64_t>(data.size())};
      pp.send(Span<const std::int64_t>(sizes, 3), 0, message_tags::kCollectSizes);
      pp.send(Span<const std::int64_t>(head), 0, message_tags::kCollectHeads);
      pp.send(Span<const char>(names.data(), names.size()), 0, message_tags::kCollectNames);
      pp.send(Span<const T>(data), 0, message_tags::kCollectData);
    } else if (pp.rank() == 0) {
      std::int64_t sizes[3];
      pp.recv(Span<std::int64_t>(sizes, 3), s, message_tags::kCollectSizes);
      std::vector<std::int64_t> head(sizes[0]);
      std::string names(sizes[1], ' ');
      std::vector<T> data(sizes[2]);
      pp.recv(Span<std::int64_t>(head), s, message_tags::kCollectHeads);
      pp.recv(Span<char>(names.data(), names.size()), s, message_tags::kCollectNames);
      pp.recv(Span<T>(data), s, message_tags::kCollectData);
      std::size_t at_name = 0, at_data = 0;
      for (std::int64_t k = 0; k < head[0]; ++k) {
        const std::int64_t len = head[1 + 3 * k], rows = head[2 + 3 * k], cols = head[3 + 3 * k];
        Matrix<T> m(rows, cols);
        std::copy_n(data.begin() + at_data, m.size(), m.data());
        at_data += m.size();
        tensors[names.substr(at_name, len)] = std::move(m);
        at_name += len;
      }
    }
  }
}
}  // namespace detail

// unit_values(chunk, unit) -> const T* to this rank's full local block of the unit (it may be
// collective over DP: every rank calls it for every unit in the same order); done(chunk, unit)
// after use. Returns the tensors on world rank 0 (empty elsewhere). Collective.
template <class M, class T, class S, class B, class Values, class Done>
NamedTensors<T> collect(Trainer<M, T, S, B>& trainer, Values&& unit_values, Done&& done) {
  const Mesh<>& mesh = trainer.mesh();
  const bool keeper = mesh.coord().tp == 0 && mesh.coord().dp == 0 && mesh.coord().cp == 0;
  NamedTensors<T> out;
  for (int c = 0; c < trainer.chunks(); ++c) {
    auto& chunk = trainer.chunk(c);
    for (int u = 0; u < chunk.store().size(); ++u) {
      const UnitLayout& layout = chunk.store().layout(u);
      const T* values = unit_values(c, u);
      for (const LocalParam& p : layout.params) {
        ShardedTensor<T> shard(p.layout);
        std::copy_n(values + p.offset, p.numel, shard.local().data());
        Matrix<T> full = all_gather(shard, mesh.tp());
        if (keeper && !trainer.tied_copy(c, u)) out[p.spec.name] = std::move(full);
      }
      done(c, u);
    }
  }
  if (keeper) detail::send_to_first_stage(mesh.pp(), out);
  if (mesh.rank() != 0) out.clear();
  return out;
}

// All parameters on world rank 0. Collective.
template <class M, class T, class S, class B>
NamedTensors<T> collect_parameters(Trainer<M, T, S, B>& t) {
  std::vector<T> host;  // the unit's parameters, staged through the host
  return collect(
      t,
      [&](int c, int u) {
        auto& st = t.chunk(c).store();
        host = backend::host_copy<B>(st.gather_parameters(u), st.padded(u));
        return host.data();
      },
      [&](int c, int u) { t.chunk(c).store().release_parameters(u); });
}

// The DP-reduced gradients (after gradients_only()) on world rank 0. Collective.
template <class M, class T, class S, class B>
NamedTensors<T> collect_gradients(Trainer<M, T, S, B>& t) {
  std::vector<T> full;
  return collect(
      t,
      [&](int c, int u) -> const T* {
        UnitStore<T, S, B>& st = t.chunk(c).store();
        const Span<S> g = st.reduced_grads(u);
        const std::vector<S> mine = backend::host_copy<B>(g.data(), g.size());
        std::vector<S> all(st.padded(u));
        if (g.size() == all.size())
          all = mine;
        else
          t.mesh().dp_cp().all_gather(Span<const S>(mine), Span<S>(all));
        full.resize(all.size());
        for (std::size_t k = 0; k < all.size(); ++k) full[k] = convert_to<T>(all[k]);
        return full.data();
      },
      [](int, int) {});
}

}  // namespace trident
