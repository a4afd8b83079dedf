// Weights in safetensors across meshes: what one mesh saves another loads, bit for bit; the
// saved tensors are the reference's; the gradient dump holds the reference's gradients, loss
// and batch; a bad file is the same Error on every rank.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <trident/io/weights.hpp>
#include <trident/models/gpt2/gpt2.hpp>

#include "parity.hpp"

using namespace trident;

namespace {
// A path in the temporary directory, the same on every rank of comm.
std::string shared_path(const Comm& comm, const std::string& name) {
  std::int64_t id = getpid();
  comm.broadcast(Span<std::int64_t>(&id, 1), 0);
  return (std::filesystem::temp_directory_path() / ("trident_" + std::to_string(id) + "_" + name))
      .string();
}
std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
double max_diff(const Matrix<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (std::size_t k = 0; k < b.size(); ++k) d = std::max(d, std::abs(a.data()[k] - b[k]));
  return d;
}
}  // namespace

TEST_CASE("save on TP2-PP2, load on TP2-DP2 with ZeRO-3: the same tensors, bit for bit") {
  TRIDENT_RANKS(4, comm);
  const std::string first = shared_path(comm, "a.safetensors"),
                    second = shared_path(comm, "b.safetensors");
  gpt2::Options a = test::small_options({2, 2, 1});
  const TokenSource data = TokenSource::synthetic(a.model.vocab);
  gpt2::Trainer<double> ta(comm, a, data);
  (void)ta.step();
  (void)ta.step();
  save_weights(ta, first);

  gpt2::Options b = test::small_options({2, 1, 2});
  b.zero = Zero<3>;
  gpt2::Trainer<double> tb(comm, b, data);
  load_weights(tb, first);
  save_weights(tb, second);
  if (comm.rank() == 0) {
    CHECK(bytes_of(first) == bytes_of(second));
    // and the saved tensors are the reference's after the same two steps
    gpt2::ReferenceGPT<double> ref(a.model);
    for (int s = 0; s < 2; ++s) {
      ref.forward_backward(sample_rows(data, a.data_seed, s, 0, a.batch, a.model.seq));
      ref.step(a.optimizer, s + 1);
    }
    const io::SafetensorsReader file(first);
    CHECK(file.names().size() == ref.params().size());
    for (const auto& [name, want] : ref.params()) {
      const std::vector<double> got = file.read<double>(name, file.info(name).shape);
      INFO(name);
      CHECK(max_diff(Eigen::Map<const Matrix<double>>(got.data(), 1, got.size()), want) <= 1e-12);
    }
    std::filesystem::remove(first);
    std::filesystem::remove(second);
  }
}

TEST_CASE("--dump-grads on PP2-DP2 with ZeRO-2: the reference's gradients, loss and batch") {
  TRIDENT_RANKS(4, comm);
  const std::string path = shared_path(comm, "grads.safetensors");
  gpt2::Options o = test::small_options({1, 2, 2});
  o.zero = Zero<2>;
  o.microbatches = 2;
  const TokenSource data = TokenSource::synthetic(o.model.vocab);
  gpt2::Trainer<double> t(comm, o, data);
  const StepResult r = dump_gradients_and_step(t, data, path);
  if (comm.rank() == 0) {
    gpt2::ReferenceGPT<double> ref(o.model);
    const Microbatch batch = sample_rows(data, o.data_seed, 0, 0, o.batch, o.model.seq);
    const double loss = ref.forward_backward(batch);
    const io::SafetensorsReader file(path);
    CHECK(std::abs(file.read<double>("loss", {})[0] - loss) <= 1e-12 * loss);
    CHECK(std::abs(r.loss - loss) <= 1e-12 * loss);
    for (const auto& [name, want] : ref.grads()) {
      const std::vector<double> got = file.read<double>(name, file.info(name).shape);
      double scale = 0;
      for (double x : want) scale = std::max(scale, std::abs(x));
      INFO(name);
      CHECK(max_diff(Eigen::Map<const Matrix<double>>(got.data(), 1, got.size()), want) <=
            1e-10 * scale);
    }
    const auto inputs = file.read<std::int32_t>("inputs", {o.batch, o.model.seq});
    for (int b = 0; b < o.batch; ++b)
      for (int s = 0; s < o.model.seq; ++s)
        CHECK(inputs[b * o.model.seq + s] == batch.inputs[s * o.batch + b]);
    std::filesystem::remove(path);
  }
}

TEST_CASE("loading a file without a parameter is the same Error on every rank") {
  TRIDENT_RANKS(2, comm);
  const std::string path = shared_path(comm, "partial.safetensors");
  if (comm.rank() == 0) {
    io::SafetensorsWriter w;
    const double x = 1;
    w.add("wte.weight", &x, {1});
    w.write(path);
  }
  comm.barrier();
  gpt2::Trainer<double> t(comm, test::small_options({2, 1, 1}), TokenSource::synthetic(67));
  std::string message;
  try {
    load_weights(t, path);
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK(message == path + ": tensor 'wte.weight' has shape [1], expected [67, 32]");
  comm.barrier();
  if (comm.rank() == 0) std::filesystem::remove(path);
}
