// trident/io/checkpoint.hpp: the whole training state of a Trainer to and from a distributed
// checkpoint (checkpoint_index.hpp, checkpoint_files.hpp), on any mesh.
//
// The state: per parameter (the model's name for it) the parameters "param/NAME" (the stored
// type S), under mixed precision the fp32 master weights "master/NAME", AdamW's moments
// "exp_avg/NAME" and "exp_avg_sq/NAME" (the compute type T); and the step, which is also the
// position of the learning-rate schedule and of the data sampler (sampling is a pure function
// of (data seed, step, row): data/tokens.hpp). There is no other random state: initialisation is
// counter-based too (core/random.hpp) and the model has no dropout.
//
// Saving: every rank writes the elements it owns — its ZeRO shard of each unit (all of it at
// stage 0, on DP rank 0 only), TP rank 0 alone for TP-replicated tensors, the first copy of a
// tied parameter (train/ties.hpp) — as boxes of the global tensors (checkpoint_slices.hpp), in its
// own shard file, in parallel, on a file system every rank sees. Loading: each rank assembles the
// global tensors of its units and keeps its block, as load_weights does; so any mesh, ZeRO stage
// or precision reads any checkpoint.
#pragma once

#include <csignal>
#include <string>

#include "../core/fault.hpp"
#include "checkpoint_reader.hpp"
#include "checkpoint_slices.hpp"

namespace trident {

namespace detail {
template <class T>
std::string dtype_name() {
  return io::to_string(io::dtype_of<T>());
}

// A split of half layers as layers per virtual stage: whole numbers as integers, halves as x.5.
inline nlohmann::json layers_json(const std::vector<int>& halves) {
  nlohmann::json out = nlohmann::json::array();
  for (int h : halves) h % 2 ? out.push_back(h / 2.0) : out.push_back(h / 2);
  return out;
}

// The index's description of the run (for people and trident-ckpt inspect).
template <class M, class T, class S, class B>
nlohmann::json describe_run(Trainer<M, T, S, B>& t) {
  const TrainOptions& o = t.options();
  nlohmann::json d = {{"saved_on",
                       {{"world", t.mesh().world().size()},
                        {"tp", o.mesh.tp},
                        {"pp", o.mesh.pp},
                        {"dp", o.mesh.dp},
                        {"zero", o.zero.stage},
                        {"virtual_stages", o.virtual_stages},
                        {"layer_split", layers_json(layer_split(t.model(), o))},
                        {"sequence_parallel", o.sequence_parallel},
                        {"compute", dtype_name<T>()},
                        {"stored", dtype_name<S>()}}},
                      {"optimizer",
                       {{"name", "AdamW"},
                        {"lr", o.optimizer.lr},
                        {"min_lr", o.optimizer.min_lr},
                        {"warmup", o.optimizer.warmup},
                        {"schedule_steps", o.optimizer.steps},
                        {"schedule_position", t.steps_done()},
                        {"beta1", o.optimizer.beta1},
                        {"beta2", o.optimizer.beta2},
                        {"eps", o.optimizer.eps},
                        {"weight_decay", o.optimizer.weight_decay},
                        {"clip", o.optimizer.clip}}},
                      {"rng",
                       {{"init", {{"generator", "the model's initial_value (a pure function)"}}},
                        {"data_sampler",
                         {{"generator", "counter-based (seed, step, row)"},
                          {"seed", o.data_seed},
                          {"position", t.steps_done()}}}}},
                      {"batch", o.batch}};
  if (o.mesh.cp > 1) d["saved_on"]["cp"] = o.mesh.cp;  // (older checkpoints: no CP axis)
  return d;
}

// Adds this rank's pieces to its shard `w` and to `pieces` (JSON, for the index).
template <class M, class T, class S, class B>
void add_owned_pieces(Trainer<M, T, S, B>& t, io::SafetensorsWriter& w, nlohmann::json& pieces) {
  const MeshCoord me = t.mesh().coord();
  for (int c = 0; c < t.chunks(); ++c) {
    UnitStore<T, S, B>& st = t.chunk(c).store();
    for (int u = 0; u < st.size(); ++u) {
      if (t.tied_copy(c, u) || (!st.policy().shards_optimizer() && (me.dp || me.cp))) continue;
      const std::size_t begin = st.owned_begin(u), owned = st.owned_size(u);
      // this rank's owned elements, staged through the host (the store's memory is B's)
      const auto param = backend::host_copy<B>(st.owned_params(u), owned);
      const auto master = backend::host_copy<B>(st.master(u), std::is_same_v<T, S> ? 0 : owned);
      const auto m = backend::host_copy<B>(st.moment1(u), owned);
      const auto v = backend::host_copy<B>(st.moment2(u), owned);
      for_each_param_in(
          st.layout(u), begin, begin + st.owned_size(u),
          [&](const LocalParam& p, std::size_t a, std::size_t b) {
            if (p.tp_replicated() && me.tp != 0) return;
            const auto boxes = io::boxes_of_range(p.layout, std::int64_t(a - p.offset),
                                                  std::int64_t(b - p.offset));
            auto add = [&](const std::string& kind, const auto* owned) {
              using V = std::remove_const_t<std::remove_pointer_t<decltype(owned)>>;
              const std::string name = kind + "/" + p.spec.name;
              for (std::size_t k = 0; k < boxes.size(); ++k) {
                const io::Box& x = boxes[k];
                std::vector<V> data;
                for (std::int64_t i = 0; i < x.rows; ++i)
                  for (std::int64_t j = 0; j < x.cols; ++j)
                    data.push_back(owned[p.offset + (x.local_row + i) * p.layout.local_cols() +
                                         x.local_col + j - begin]);
                const bool two = p.spec.shape.size() == 2;
                std::vector<std::int64_t> offsets{x.col}, lengths{x.cols};
                if (two) {
                  offsets = {x.row, x.col};
                  lengths = {x.rows, x.cols};
                }
                const std::string key = name + "@" + std::to_string(pieces.size());
                w.add(key, data.data(), lengths);
                pieces.push_back({{"tensor", name},
                                  {"dtype", dtype_name<V>()},
                                  {"shape", p.spec.shape},
                                  {"key", key},
                                  {"offsets", offsets},
                                  {"lengths", lengths}});
              }
            };
            add("param", param.data());
            if constexpr (!std::is_same_v<T, S>) add("master", master.data());
            add("exp_avg", m.data());
            add("exp_avg_sq", v.data());
          });
    }
  }
}

// Every rank's string, on every rank. Collective.
inline std::vector<std::string> all_gather_strings(const Comm& world, const std::string& mine) {
  const std::uint64_t n = mine.size();
  std::vector<std::uint64_t> sizes(world.size());
  world.all_gather(Span<const std::uint64_t>(&n, 1), Span<std::uint64_t>(sizes));
  const std::uint64_t most = *std::max_element(sizes.begin(), sizes.end());
  std::string padded = mine + std::string(most - n, ' ');
  std::string all(most * world.size(), ' ');
  world.all_gather(Span<const char>(padded.data(), most), Span<char>(all.data(), all.size()));
  std::vector<std::string> out;
  for (int r = 0; r < world.size(); ++r) out.push_back(all.substr(r * most, sizes[r]));
  return out;
}
}  // namespace detail

// Writes the training state after t.steps_done() steps to DIR/step-N (atomically), keeping the
// newest `keep` checkpoints (0: all). Returns the checkpoint's path. Collective.
template <class M, class T, class S, class B>
std::string save_checkpoint(Trainer<M, T, S, B>& t, const std::string& dir, int keep) {
  const Comm& world = t.mesh().world();
  const int step = t.steps_done();
  const io::fs::path final_dir = io::fs::path(dir) / io::checkpoint_name(step);
  const io::fs::path tmp = io::fs::path(dir) / (".tmp-" + io::checkpoint_name(step));
  detail::agreed(world, [&] {
    if (world.rank() != 0) return;
    std::error_code ec;
    io::fs::create_directories(dir, ec);
    io::fs::remove_all(tmp, ec);
    if (!io::fs::create_directories(tmp, ec))
      fail(tmp.string() + ": cannot create the checkpoint directory");
  });
  nlohmann::json pieces = nlohmann::json::array();
  std::uint64_t file[2] = {0, 0};  // this rank's shard: bytes, checksum
  detail::agreed(world, [&] {
    io::SafetensorsWriter w;
    detail::add_owned_pieces(t, w, pieces);
    const io::fs::path path = tmp / io::shard_file_name(world.rank(), world.size());
    w.write(path.string());
    if (fault::armed("kill-during-save", world.rank(), step)) {  // the shard half written
      io::fs::resize_file(path, io::fs::file_size(path) / 2);
      std::raise(SIGKILL);
    }
    io::fsync_path(path);
    file[0] = io::fs::file_size(path);
    file[1] = io::file_checksum(path);
  });
  std::vector<std::uint64_t> files(2 * world.size());
  world.all_gather(Span<const std::uint64_t>(file, 2), Span<std::uint64_t>(files));
  const std::vector<std::string> all = detail::all_gather_strings(world, pieces.dump());
  detail::agreed(world, [&] {
    if (world.rank() != 0) return;
    io::CheckpointIndex x;
    x.step = step;
    x.model = t.model().describe();
    x.data_seed = t.options().data_seed;
    x.about = detail::describe_run(t);
    for (int r = 0; r < world.size(); ++r) {
      x.shards.push_back({io::shard_file_name(r, world.size()), files[2 * r], files[2 * r + 1]});
      for (const nlohmann::json& p : nlohmann::json::parse(all[r])) {
        io::CheckpointTensor& e = x.tensors[p.at("tensor").get<std::string>()];
        io::parse_dtype(p.at("dtype").get<std::string>(), e.dtype);
        e.shape = p.at("shape").get<std::vector<std::int64_t>>();
        e.pieces.push_back({r, p.at("key").get<std::string>(),
                            p.at("offsets").get<std::vector<std::int64_t>>(),
                            p.at("lengths").get<std::vector<std::int64_t>>()});
      }
    }
    const io::fs::path index = tmp / "index.json";
    {
      std::ofstream out(index, std::ios::binary);
      out << io::to_json(x) << "\n";
      if (!out.flush()) fail(index.string() + ": cannot write the checkpoint index");
    }
    io::fsync_path(index);
    io::publish_checkpoint(tmp, final_dir, keep);
  });
  return final_dir.string();
}

// Replaces the whole training state with the checkpoint at `path` (a checkpoint, or a directory
// of them: the newest complete one). Returns the checkpoint read. Collective.
template <class M, class T, class S, class B>
std::string load_checkpoint(Trainer<M, T, S, B>& t, const std::string& path) {
  std::string found;
  int step = 0;
  detail::agreed(t.mesh().world(), [&] {
    found = io::resolve_checkpoint(path).string();
    if (found.empty()) fail(path + ": no complete checkpoint in this directory");
    io::CheckpointReader r(found);
    const io::CheckpointIndex& x = r.index();
    const ModelDescription &m = x.model, o = t.model().describe();
    auto s = [](const ModelDescription& d) {
      std::string text;
      for (const auto& [name, value] : d)
        text += (text.empty() ? "" : " ") + name + "=" + std::to_string(value);
      return text;
    };
    if (m != o) fail(found + ": the checkpoint's model is " + s(m) + ", this run's is " + s(o));
    if (x.data_seed != t.options().data_seed)
      fail(found + ": the checkpoint was trained with --data-seed " + std::to_string(x.data_seed) +
           "; resume with the same seed to continue its data stream");
    auto unit_values = [&](const UnitLayout& l, const std::string& kind, T* out) {
      for (const LocalParam& p : l.params) {
        const std::vector<T> full = r.read<T>(kind + "/" + p.spec.name, p.spec.shape);
        fill_local(p.layout, out + p.offset, [&](std::int64_t g) { return full[g]; });
      }
    };
    for (int c = 0; c < t.chunks(); ++c) {
      UnitStore<T, S, B>& st = t.chunk(c).store();
      const bool master = r.contains("master/" + st.layout(0).params[0].spec.name);
      st.initialise(
          [&](int u, T* out) { unit_values(st.layout(u), master ? "master" : "param", out); });
      for (int u = 0; u < st.size(); ++u) {
        std::vector<T> full(st.padded(u), T(0));
        const std::size_t begin = st.owned_begin(u), n = st.owned_size(u);
        unit_values(st.layout(u), "exp_avg", full.data());
        backend::copy_from_host<B>(st.moment1(u), full.data() + begin, n);
        std::fill(full.begin(), full.end(), T(0));
        unit_values(st.layout(u), "exp_avg_sq", full.data());
        backend::copy_from_host<B>(st.moment2(u), full.data() + begin, n);
      }
    }
    step = x.step;
  });
  t.restore_step(step);
  return found;
}

// --resume: the checkpoint at `path`, or the newest in the directory `path`. With fresh_if_none,
// a directory that holds none (or does not exist yet) leaves the trainer at step 0 and returns
// "". Returns the checkpoint read. Collective.
template <class M, class T, class S, class B>
[[nodiscard]] std::string resume_training(Trainer<M, T, S, B>& t, const std::string& path,
                                          bool fresh_if_none) {
  bool none = false;
  detail::agreed(t.mesh().world(), [&] {
    std::error_code ec;
    none = fresh_if_none && (!io::fs::exists(path, ec) || io::resolve_checkpoint(path).empty());
  });
  return none ? std::string() : load_checkpoint(t, path);
}

}  // namespace trident
