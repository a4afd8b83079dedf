// trident/io/weights.hpp: a Trainer's parameters to and from safetensors files in the model's
// file layout (io/file_layout.hpp: its names, or another framework's names and layout — GPT-2's
// names are Hugging Face's, Llama declares Hugging Face's layout), and the gradient dump of one
// step in the same layout.
//
// Saving gathers every tensor on world rank 0, which writes the file. Loading has every rank
// read the file and keep its own block (its TP shard; its DP shard under ZeRO-3). Errors are
// agreed between ranks, so a bad file is the same Error everywhere.
#pragma once

#include <string>

#include "../core/environment.hpp"
#include "../train/collect.hpp"
#include "file_layout.hpp"
#include "safetensors.hpp"

namespace trident {

namespace detail {
// Runs f() on every rank; an Error on any rank becomes the same Error on all. Collective.
template <class F>
void agreed(const Comm& world, F&& f) {
  std::string message;
  try {
    f();
  } catch (const Error& e) {
    message = e.what();
  }
  agree(world, message.empty(), message);
}

template <class M, class T>
void add_tensors(io::SafetensorsWriter& w, const M& model, const NamedTensors<T>& tensors) {
  for (const UnitSpec& u : whole_model_units(model))
    for (const ParamSpec& p : u.params) {
      const std::vector<FileTensor> pieces = file_tensors(model, p);
      const int n = int(pieces.size());
      const T* whole = tensors.at(p.name).data();
      for (int k = 0; k < n; ++k) {
        const std::vector<std::int64_t> shape = file_shape(p, pieces[k], n);
        if (n == 1 && !pieces[k].transposed) {  // stored as held (GPT-2's every tensor)
          w.add(pieces[k].name, whole, shape);
          continue;
        }
        std::vector<T> piece(std::size_t(tensors.at(p.name).size()) / n);
        for_each_file_element(p, pieces[k], n, k,
                              [&](std::int64_t f, std::int64_t g) { piece[f] = whole[g]; });
        w.add(pieces[k].name, piece.data(), shape);
      }
    }
}

// A tensor of the file as T, whatever its floating-point dtype (F64, F32 or BF16).
template <class T>
std::vector<T> read_as(const io::SafetensorsReader& r, const std::string& name,
                       const std::vector<std::int64_t>& shape) {
  auto convert = [](const auto& in) {
    std::vector<T> out(in.size());
    for (std::size_t k = 0; k < in.size(); ++k) out[k] = convert_to<T>(in[k]);
    return out;
  };
  switch (r.info(name).dtype) {
    case io::DType::F64:
      return convert(r.read<double>(name, shape));
    case io::DType::F32:
      return convert(r.read<float>(name, shape));
    case io::DType::BF16:
      return convert(r.read<bf16>(name, shape));
    default:
      fail(r.path() + ": tensor '" + name + "' has dtype " + io::to_string(r.info(name).dtype) +
           "; parameters must be F64, F32 or BF16");
  }
}

// Parameter p, whole, from its file tensors (io/file_layout.hpp).
template <class T, class M>
std::vector<T> read_parameter(const io::SafetensorsReader& r, const M& model, const ParamSpec& p) {
  const std::vector<FileTensor> pieces = file_tensors(model, p);
  const int n = int(pieces.size());
  if (n == 1 && !pieces[0].transposed) return read_as<T>(r, pieces[0].name, p.shape);
  std::size_t numel = 1;
  for (std::int64_t d : p.shape) numel *= std::size_t(d);
  std::vector<T> whole(numel);
  for (int k = 0; k < n; ++k) {
    const std::vector<T> piece = read_as<T>(r, pieces[k].name, file_shape(p, pieces[k], n));
    for_each_file_element(p, pieces[k], n, k,
                          [&](std::int64_t f, std::int64_t g) { whole[g] = piece[f]; });
  }
  return whole;
}
}  // namespace detail

// Writes every parameter to `path` (from world rank 0). Collective.
template <class M, class T, class S, class B>
void save_weights(Trainer<M, T, S, B>& t, const std::string& path) {
  const NamedTensors<T> params = collect_parameters(t);
  detail::agreed(t.mesh().world(), [&] {
    if (t.mesh().rank() != 0) return;
    io::SafetensorsWriter w;
    detail::add_tensors(w, t.model(), params);
    w.set_metadata("format", "pt");
    w.write(path);
  });
}

// Replaces the parameters (and resets the optimizer) with those of `path`. Collective.
template <class M, class T, class S, class B>
void load_weights(Trainer<M, T, S, B>& t, const std::string& path) {
  detail::agreed(t.mesh().world(), [&] {
    const io::SafetensorsReader r(path);
    for (int c = 0; c < t.chunks(); ++c) {
      UnitStore<T, S, B>& st = t.chunk(c).store();
      st.initialise([&](int u, T* out) {
        for (const LocalParam& p : st.layout(u).params) {
          const std::vector<T> full = detail::read_parameter<T>(r, t.model(), p.spec);
          fill_local(p.layout, out + p.offset, [&](std::int64_t g) { return full[g]; });
        }
      });
    }
  });
}

// Runs the step's forward and backward and writes, before the optimizer, every gradient of the
// mean loss, the loss (scalar "loss") and the global batch ("inputs", "targets": int32
// [batch, seq]) — what another framework needs to reproduce the step from the same weights.
// Then applies the optimizer. Collective.
template <class M, class T, class S, class B>
StepResult dump_gradients_and_step(Trainer<M, T, S, B>& t, const TokenSource& data,
                                   const std::string& path) {
  StepResult r = t.gradients_only();
  const NamedTensors<T> grads = collect_gradients(t);
  detail::agreed(t.mesh().world(), [&] {
    if (t.mesh().rank() != 0) return;
    const TrainOptions& o = t.options();
    io::SafetensorsWriter w;
    detail::add_tensors(w, t.model(), grads);
    const T loss = static_cast<T>(r.loss);
    w.add("loss", &loss, {});
    const int seq = t.model().seq();
    std::vector<std::int32_t> inputs(std::size_t(o.batch) * seq), targets(inputs.size());
    for (int row = 0; row < o.batch; ++row)
      data.sample(o.data_seed, t.steps_done(), row, seq, &inputs[std::size_t(row) * seq],
                  &targets[std::size_t(row) * seq]);
    w.add("inputs", inputs.data(), {o.batch, seq});
    w.add("targets", targets.data(), {o.batch, seq});
    w.write(path);
  });
  t.apply_optimizer(r);
  return r;
}

}  // namespace trident
