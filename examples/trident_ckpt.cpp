// examples/trident_ckpt: look into, export and import trident's distributed checkpoints.
//
//   trident-ckpt inspect ck/step-00000005          mesh, step, tensors; every checksum verified
//   trident-ckpt export ck/step-00000005 gpt2.safetensors    one Hugging Face GPT-2 file
//   trident-ckpt import gpt2.safetensors ck --heads 12       ck/step-00000000, for --resume
//
// Runs as one process. Export writes each parameter whole, under its GPT-2 name, from the fp32
// master weights when the checkpoint has them (mixed precision), else from the parameters.
// Import writes a checkpoint of step 0: those parameters, AdamW moments zero — so that
// `train_gpt --resume ck` trains exactly as `train_gpt --init gpt2.safetensors` does.
#include <cstdio>
#include <trident/io/checkpoint_reader.hpp>
#include <trident/io/cli.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/models/gpt2/gpt2.hpp>

using namespace trident;

namespace {

int inspect(const std::string& path) {
  const io::fs::path dir = io::resolve_checkpoint(path);
  require(!dir.empty(), path + ": no complete checkpoint in this directory");
  io::CheckpointReader r(dir);
  const io::CheckpointIndex& x = r.index();
  const nlohmann::json& on = x.about.value("saved_on", nlohmann::json::object());
  std::printf("checkpoint %s: step %d\n", dir.c_str(), x.step);
  std::printf("saved on: %s\n", on.dump().c_str());
  const gpt2::Config m = gpt2::config_of(x.model);
  std::printf("model: V=%d T=%d L=%d C=%d H=%d | data seed %llu\n", m.vocab, m.seq, m.layers,
              m.hidden, m.heads, static_cast<unsigned long long>(x.data_seed));
  if (x.about.contains("optimizer"))
    std::printf("optimizer: %s\n", x.about["optimizer"].dump().c_str());
  std::uint64_t bytes = 0;
  for (int s = 0; s < int(x.shards.size()); ++s) {
    r.shard(s);  // size and checksum against the index
    bytes += x.shards[s].bytes;
    std::printf("  %s  %10llu bytes  fnv1a64 %s  verified\n", x.shards[s].file.c_str(),
                static_cast<unsigned long long>(x.shards[s].bytes),
                io::hex64(x.shards[s].checksum).c_str());
  }
  std::printf("%-40s %-12s %-5s %s\n", "tensor", "shape", "dtype", "pieces");
  std::int64_t elements = 0;
  for (const auto& [name, t] : x.tensors) {
    const std::vector<double> all = r.read<double>(name, t.shape);  // every element exactly once
    elements += static_cast<std::int64_t>(all.size());
    std::printf("%-40s %-12s %-5s %zu\n", name.c_str(), io::detail::shape_string(t.shape).c_str(),
                io::to_string(t.dtype), t.pieces.size());
  }
  std::printf(
      "%zu tensors, %lld elements, %zu shards, %llu bytes: every checksum verified, "
      "every tensor covered exactly once\n",
      x.tensors.size(), static_cast<long long>(elements), x.shards.size(),
      static_cast<unsigned long long>(bytes));
  return 0;
}

int export_weights(const std::string& path, const std::string& out) {
  const io::fs::path dir = io::resolve_checkpoint(path);
  require(!dir.empty(), path + ": no complete checkpoint in this directory");
  io::CheckpointReader r(dir);
  io::SafetensorsWriter w;
  for (const UnitSpec& u : gpt2::all_units(gpt2::config_of(r.index().model)))
    for (const ParamSpec& p : u.params) {
      const std::string name = (r.contains("master/" + p.name) ? "master/" : "param/") + p.name;
      if (r.tensor(name).dtype == io::DType::F64)
        w.add(p.name, r.read<double>(name, p.shape).data(), p.shape);
      else
        w.add(p.name, r.read<float>(name, p.shape).data(), p.shape);
    }
  w.set_metadata("format", "pt");
  w.write(out);
  std::printf("exported %s (step %d) to %s\n", dir.c_str(), r.index().step, out.c_str());
  return 0;
}

int import_weights(const std::string& in, const std::string& out_dir, int heads,
                   std::uint64_t data_seed) {
  const io::SafetensorsReader f(in);
  io::CheckpointIndex x;
  const auto& wte = f.info("wte.weight").shape;
  require(wte.size() == 2 && f.info("wpe.weight").shape.size() == 2,
          in + ": wte.weight and wpe.weight must be matrices");
  gpt2::Config m = {int(wte[0]), int(f.info("wpe.weight").shape[0]), 0, int(wte[1]), heads, 0};
  while (f.contains("h." + std::to_string(m.layers) + ".ln_1.weight")) ++m.layers;
  m.validate();
  x.model = gpt2::Model(m).describe();
  x.data_seed = data_seed;
  x.about = {{"imported_from", in}, {"saved_on", {{"world", 1}}}};
  io::SafetensorsWriter w;
  for (const UnitSpec& u : gpt2::all_units(m))
    for (const ParamSpec& p : u.params) {
      const bool f64 = f.info(p.name).dtype == io::DType::F64;
      const std::vector<double> values = trident::detail::read_as<double>(f, p.name, p.shape);
      const std::vector<std::int64_t> zero(p.shape.size(), 0);
      for (const char* kind : {"param", "exp_avg", "exp_avg_sq"}) {
        const std::string key = std::string(kind) + "/" + p.name;
        std::vector<double> v =
            kind == std::string("param") ? values : std::vector<double>(values.size());
        if (f64) {
          w.add(key, v.data(), p.shape);
        } else {  // F32 (a BF16 file's values are exact in F32)
          std::vector<float> single(v.begin(), v.end());
          w.add(key, single.data(), p.shape);
        }
        x.tensors[key] = {
            f64 ? io::DType::F64 : io::DType::F32, p.shape, {{0, key, zero, p.shape}}};
      }
    }
  const io::fs::path dir = out_dir, final_dir = dir / io::checkpoint_name(0);
  const io::fs::path tmp = dir / (".tmp-" + io::checkpoint_name(0));
  std::error_code ec;
  io::fs::remove_all(tmp, ec);
  require(io::fs::create_directories(tmp, ec), tmp.string() + ": cannot create the directory");
  const io::fs::path shard = tmp / io::shard_file_name(0, 1);
  w.write(shard.string());
  io::fsync_path(shard);
  x.shards.push_back(
      {shard.filename().string(), io::fs::file_size(shard), io::file_checksum(shard)});
  {
    std::ofstream index(tmp / "index.json", std::ios::binary);
    index << io::to_json(x) << "\n";
    require(static_cast<bool>(index.flush()), (tmp / "index.json").string() + ": cannot write");
  }
  io::fsync_path(tmp / "index.json");
  io::publish_checkpoint(tmp, final_dir, 0);
  std::printf("imported %s (V=%d T=%d L=%d C=%d H=%d) as %s: step 0, AdamW moments zero\n",
              in.c_str(), m.vocab, m.seq, m.layers, m.hidden, heads, final_dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    require(world.size() == 1, "trident-ckpt runs as one process");
    cli::App app{"Inspect, export and import trident's distributed checkpoints."};
    app.require_subcommand(1);
    std::string path, out, in;
    int heads = 0;
    std::uint64_t data_seed = 42;
    auto* ins = app.add_subcommand("inspect", "mesh, step, tensors, sizes; verify every checksum");
    ins->add_option("checkpoint", path, "a checkpoint, or a directory of them (the newest)")
        ->required();
    auto* exp = app.add_subcommand("export", "write the parameters as one GPT-2 safetensors file");
    exp->add_option("checkpoint", path, "a checkpoint, or a directory of them")->required();
    exp->add_option("output", out, "the safetensors file to write")->required();
    auto* imp = app.add_subcommand("import", "a GPT-2 safetensors file as a step-0 checkpoint");
    imp->add_option("input", in, "GPT-2 safetensors (Hugging Face names)")->required();
    imp->add_option("directory", out, "checkpoint directory (gets step-00000000)")->required();
    imp->add_option("--heads", heads, "attention heads (not in the file)")->required();
    imp->add_option("--data-seed", data_seed, "the data seed the run will use")
        ->capture_default_str();
    parse_command_line(app, argc, argv, world);
    if (*ins) return inspect(path);
    if (*exp) return export_weights(path, out);
    return import_weights(in, out, heads, data_seed);
  });
}
