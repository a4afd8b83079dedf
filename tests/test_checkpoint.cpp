// Full checkpoints: a run saved at step 5 and resumed — on the same mesh, bit for bit; on any
// other mesh (TP, PP, DP, ZeRO stage, virtual stages, layer split), the uninterrupted run's
// losses to 1e-10 in double. Damaged or mismatched checkpoints are one Error on every rank.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <trident/io/checkpoint.hpp>
#include <trident/models/gpt2/gpt2.hpp>

#include "parity.hpp"

using namespace trident;

namespace {
constexpr int kSteps = 10, kSaveAt = 5;

// A directory in the temporary directory, the same on every rank of comm, empty.
std::string fresh_dir(const Comm& comm, const std::string& name) {
  std::int64_t id = getpid();
  comm.broadcast(Span<std::int64_t>(&id, 1), 0);
  const auto dir =
      std::filesystem::temp_directory_path() / ("trident_ckpt_" + std::to_string(id) + "_" + name);
  if (comm.rank() == 0) std::filesystem::remove_all(dir);
  comm.barrier();
  return dir.string();
}

gpt2::Options options(MeshShape mesh, int zero, int microbatches = 1) {
  gpt2::Options o = test::small_options(mesh);
  o.zero.stage = zero;
  o.microbatches = microbatches;
  o.optimizer.warmup = 2;
  o.optimizer.steps = kSteps;
  return o;
}

struct Run {
  std::vector<double> losses;               // of the steps this run took
  std::vector<std::vector<double>> params;  // every unit this rank holds, at the end
};

// Trains to step kSteps: from the checkpoint `resume` (if any), saving into `dir` at kSaveAt.
template <class T, class S = T>
Run train(const Comm& comm, const gpt2::Options& o, const std::string& resume,
          const std::string& dir = "") {
  gpt2::Trainer<T, S> t(comm, o, TokenSource::synthetic(o.model.vocab));
  if (!resume.empty()) load_checkpoint(t, resume);
  Run r;
  while (t.steps_done() < kSteps) {
    r.losses.push_back(t.step().loss);
    if (!dir.empty() && t.steps_done() == kSaveAt) save_checkpoint(t, dir, 0);
  }
  for (int c = 0; c < t.chunks(); ++c) {
    UnitStore<T, S>& st = t.chunk(c).store();
    for (int u = 0; u < st.size(); ++u) {
      const T* p = st.gather_parameters(u);
      r.params.emplace_back(p, p + st.padded(u));
      st.release_parameters(u);
    }
  }
  return r;
}

// The resumed run's losses against the uninterrupted run's steps kSaveAt+1..kSteps.
void check_losses(const Run& whole, const Run& resumed, double tol) {
  REQUIRE(resumed.losses.size() == std::size_t(kSteps - kSaveAt));
  for (int s = kSaveAt; s < kSteps; ++s) {
    INFO("step " << s + 1);
    const double a = whole.losses[s], b = resumed.losses[s - kSaveAt];
    if (tol == 0)
      CHECK(a == b);
    else
      CHECK(std::abs(a - b) <= tol * std::abs(a));
  }
}

// Saves at step 5 on `from`, resumes on each of `to` (each on the first ranks it needs):
// steps 6-10 match the uninterrupted run to 1e-10 (double).
void check_resharding(const Comm& comm, const gpt2::Options& from,
                      const std::vector<gpt2::Options>& to, const std::string& name) {
  const std::string dir = fresh_dir(comm, name);
  const Run whole = train<double>(comm, from, "", dir);
  const std::string saved = dir + "/" + io::checkpoint_name(kSaveAt);
  for (const gpt2::Options& o : to) {
    const int n = o.mesh.product();
    Comm sub = comm.split(comm.rank() < n ? 0 : Comm::kUndefined, comm.rank(), "resume");
    if (!sub.valid()) continue;
    INFO("resumed on TP" << o.mesh.tp << " PP" << o.mesh.pp << " DP" << o.mesh.dp << " CP"
                         << o.mesh.cp << " ZeRO-" << o.zero.stage);
    check_losses(whole, train<double>(sub, o, saved), 1e-10);
  }
  comm.barrier();
}

// Saves at step 5 and resumes on the same mesh: losses and parameters identical, bit for bit.
template <class T, class S = T>
void check_bitwise(const Comm& comm, const gpt2::Options& o, const std::string& name) {
  const std::string dir = fresh_dir(comm, name);
  const Run whole = train<T, S>(comm, o, "", dir);
  const Run resumed = train<T, S>(comm, o, dir);  // the directory: its newest checkpoint
  check_losses(whole, resumed, 0);
  REQUIRE(whole.params.size() == resumed.params.size());
  for (std::size_t u = 0; u < whole.params.size(); ++u) CHECK(whole.params[u] == resumed.params[u]);
}
}  // namespace

TEST_CASE("saved on TP2-PP2-DP2 ZeRO-1, resumed on TP1-PP4-DP2 ZeRO-3, TP4-DP2, one process") {
  TRIDENT_RANKS(8, comm);
  check_resharding(comm, options({2, 2, 2}, 1, 2),
                   {options({1, 4, 2}, 3, 4), options({4, 1, 2}, 0), options({1, 1, 1}, 0)},
                   "reshard8");
}

// Context parallelism holds the same parameters on every CP rank and shards ZeRO over DP x CP:
// a checkpoint saved there resumes on any CP size.
TEST_CASE("saved on CP2-DP2 ZeRO-2, resumed on CP4, TP2-CP2 ZeRO-1, one process; CP2 bit for bit") {
  TRIDENT_RANKS(4, comm);
  check_resharding(comm, options({1, 1, 2, 2}, 2),
                   {options({1, 1, 1, 4}, 0), options({2, 1, 1, 2}, 1), options({1, 1, 1}, 0)},
                   "reshard_cp");
  const Comm two = comm.split(comm.rank() < 2 ? 0 : Comm::kUndefined, comm.rank(), "two");
  if (two.valid()) check_bitwise<double>(two, options({1, 1, 1, 2}, 3), "bitwise_cp");
}

TEST_CASE("resumed on the same mesh (TP2-PP2-DP2 ZeRO-1): float and bf16 bit for bit") {
  TRIDENT_RANKS(8, comm);
  check_bitwise<float>(comm, options({2, 2, 2}, 1, 2), "same8_float");
  check_bitwise<float, bf16>(comm, options({2, 2, 2}, 1, 2), "same8_bf16");
}

TEST_CASE("saved on PP2-DP2 ZeRO-3 interleaved, resumed on TP2-DP2 ZeRO-2 with SP, TP2-PP2 3+1") {
  TRIDENT_RANKS(4, comm);
  gpt2::Options from = options({1, 2, 2}, 3, 2);
  from.schedule = pp::ScheduleKind::interleaved;
  from.virtual_stages = 2;
  gpt2::Options sp = options({2, 1, 2}, 2);
  sp.sequence_parallel = true;
  gpt2::Options split = options({2, 2, 1}, 0, 2);
  split.pp_layers = {3, 1};
  check_resharding(comm, from, {sp, split, options({1, 1, 1}, 1)}, "reshard4");
}

TEST_CASE("saved on DP2 ZeRO-2, resumed on PP2 1+3; DP2 ZeRO-3 bf16 resumed bit for bit") {
  TRIDENT_RANKS(2, comm);
  gpt2::Options split = options({1, 2, 1}, 0, 2);
  split.pp_layers = {1, 3};
  check_resharding(comm, options({1, 1, 2}, 2), {split}, "reshard2");
  check_bitwise<float, bf16>(comm, options({1, 1, 2}, 3), "same2_bf16");
}

TEST_CASE("one process: resumed bit for bit (double, float)") {
  TRIDENT_RANKS(1, comm);
  check_bitwise<double>(comm, options({1, 1, 1}, 0), "same1_double");
  check_bitwise<float>(comm, options({1, 1, 1}, 0), "same1_float");
}

TEST_CASE("a directory resumes from its newest complete checkpoint; keep; damage is one Error") {
  TRIDENT_RANKS(2, comm);
  namespace fs = std::filesystem;
  const gpt2::Options o = options({1, 1, 2}, 1);
  const std::string dir = fresh_dir(comm, "keep2");
  gpt2::Trainer<double> t(comm, o, TokenSource::synthetic(o.model.vocab));
  for (int s = 1; s <= 3; ++s) {
    (void)t.step();
    save_checkpoint(t, dir, 2);
  }
  // an interrupted save of step 4: a temporary directory, never read
  if (comm.rank() == 0) fs::create_directories(dir + "/.tmp-" + io::checkpoint_name(4));
  comm.barrier();
  const auto kept = io::complete_checkpoints(dir);
  REQUIRE(kept.size() == 2);
  CHECK(kept[0].filename() == io::checkpoint_name(2));
  gpt2::Trainer<double> resumed(comm, o, TokenSource::synthetic(o.model.vocab));
  CHECK(load_checkpoint(resumed, dir) == dir + "/" + io::checkpoint_name(3));
  CHECK(resumed.steps_done() == 3);

  auto error_of = [&](const std::string& path, const gpt2::Options& opts) {
    gpt2::Trainer<double> fresh(comm, opts, TokenSource::synthetic(opts.model.vocab));
    try {
      load_checkpoint(fresh, path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string step3 = dir + "/" + io::checkpoint_name(3);
  gpt2::Options wider = o;
  wider.model.hidden = 64;
  CHECK(error_of(step3, wider)
            .find("the checkpoint's model is heads=8 hidden=32 layers=4 seq=16 vocab=67, this "
                  "run's is heads=8 hidden=64 layers=4 seq=16 vocab=67") != std::string::npos);
  gpt2::Options reseeded = o;
  reseeded.data_seed = 7;
  CHECK(error_of(step3, reseeded).find("--data-seed 42") != std::string::npos);
  CHECK(error_of(dir + "/nothing", o).find("no such checkpoint") != std::string::npos);
  comm.barrier();
  if (comm.rank() == 0) {  // one flipped byte in rank 1's shard
    std::fstream f(step3 + "/" + io::shard_file_name(1, 2),
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x7f');
  }
  comm.barrier();
  const std::string damaged = error_of(step3, o);
  INFO(damaged);
  CHECK(damaged.find("shard-00001-of-00002.safetensors: the shard is corrupt") !=
        std::string::npos);
}

TEST_CASE("TRIDENT_FAULT arms one fault: its kind, rank and step") {
  TRIDENT_RANKS(1, comm);
  (void)comm;
  unsetenv("TRIDENT_FAULT");
  CHECK(!fault::from_environment());
  CHECK(!fault::armed("kill-during-save", 0, 0));
  setenv("TRIDENT_FAULT", "kill-during-save:rank=3:step=12", 1);
  const auto spec = fault::from_environment();
  REQUIRE(spec);
  CHECK((spec->kind == "kill-during-save" && spec->rank == 3 && spec->step == 12));
  CHECK(fault::armed("kill-during-save", 3, 12));
  CHECK(!fault::armed("kill-during-save", 3, 11));
  CHECK(!fault::armed("kill-during-save", 2, 12));
  CHECK(!fault::armed("skip-collective", 3, 12));
  for (const char* bad : {":rank=1:step=2", "kill-during-save:rank=-1:step=2",
                          "kill-during-save:rank=1:step=2:x", "kill-during-save:rank=1:step="}) {
    setenv("TRIDENT_FAULT", bad, 1);
    CHECK_THROWS_AS(fault::from_environment(), Error);
  }
  unsetenv("TRIDENT_FAULT");
}

TEST_CASE("a bf16 checkpoint loads into an fp32 run: the parameters are its master weights") {
  TRIDENT_RANKS(2, comm);
  const gpt2::Options o = options({1, 1, 2}, 1);
  const std::string dir = fresh_dir(comm, "bf16_to_fp32");
  gpt2::Trainer<float, bf16> mixed(comm, o, TokenSource::synthetic(o.model.vocab));
  (void)mixed.step(), (void)mixed.step();
  const std::string path = save_checkpoint(mixed, dir, 0);
  const gpt2::Options single = options({1, 1, 1}, 0);
  Comm one = comm.split(comm.rank() == 0 ? 0 : Comm::kUndefined, 0, "one");
  // the masters, gathered over DP on the mixed run
  std::vector<std::vector<float>> masters;
  UnitStore<float, bf16>& ms = mixed.chunk(0).store();
  for (int u = 0; u < ms.size(); ++u) {
    std::vector<float> all(ms.padded(u));
    comm.all_gather(Span<const float>(ms.master(u), ms.owned_size(u)), Span<float>(all));
    masters.push_back(all);
  }
  std::string plain_path;
  if (one.valid()) {
    gpt2::Trainer<float> plain(one, single, TokenSource::synthetic(single.model.vocab));
    load_checkpoint(plain, path);
    CHECK(plain.steps_done() == 2);
    UnitStore<float>& ps = plain.chunk(0).store();
    for (int u = 0; u < ps.size(); ++u) {
      INFO("unit " << ps.layout(u).name);
      const float* p = ps.gather_parameters(u);
      CHECK(std::vector<float>(p, p + ps.layout(u).numel) ==
            std::vector<float>(masters[u].begin(), masters[u].begin() + ps.layout(u).numel));
    }
    (void)plain.step();
    plain_path = save_checkpoint(plain, dir + "/plain", 0);
  }
  // and back: the fp32 checkpoint into a bf16 run on DP2 ZeRO-3, its parameters the masters
  std::uint64_t length = plain_path.size();
  comm.broadcast(Span<std::uint64_t>(&length, 1), 0);
  plain_path.resize(length);
  comm.broadcast(Span<char>(plain_path.data(), length), 0);
  gpt2::Trainer<float, bf16> back(comm, options({1, 1, 2}, 3),
                                  TokenSource::synthetic(o.model.vocab));
  load_checkpoint(back, plain_path);
  CHECK(back.steps_done() == 3);
  io::CheckpointReader r(plain_path);
  UnitStore<float, bf16>& bs = back.chunk(0).store();
  for (int u = 0; u < bs.size(); ++u) {
    std::vector<float> full(bs.padded(u), 0.0f);
    for (const LocalParam& p : bs.layout(u).params) {
      const std::vector<float> g = r.read<float>("param/" + p.spec.name, p.spec.shape);
      std::copy(g.begin(), g.end(), full.begin() + p.offset);  // TP1: the local block is global
    }
    INFO("unit " << bs.layout(u).name);
    CHECK(std::vector<float>(bs.master(u), bs.master(u) + bs.owned_size(u)) ==
          std::vector<float>(full.begin() + bs.owned_begin(u),
                             full.begin() + bs.owned_begin(u) + bs.owned_size(u)));
  }
}
