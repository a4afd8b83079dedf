// The trainer on the emulated device (backend::Emulated: the CPU behind guarded memory that host
// code cannot touch, its collectives staged through the host, as on GPUs that ranks share): the
// parity suite's mesh list — one process; TP 2 and 4 with and without sequence parallelism;
// PP with GPipe, 1F1B, interleaved, ZB-H1 and ZB-V; DP with ZeRO 0-3; TP2-PP2-DP2 — for GPT-2 in
// double against the single-process reference (1e-10), and in float and bf16 mixed precision
// against the CPU backend on the same mesh, bit for bit (the same kernels, run as launches on
// the device's memory); Llama on the same kinds of mesh against its CPU single-process run in
// double and against the CPU backend bit for bit in float; and the host-device crossings of a
// step, counted.
#include <trident/backend/emulated/emulated.hpp>
#include <trident/models/llama/llama.hpp>

#include "model_parity.hpp"
#include "parity.hpp"

using namespace trident;
using backend::Cpu;
using backend::Emulated;
using pp::ScheduleKind;

namespace {

// One mesh of the list: its ranks and the run's options (the small GPT-2 of parity.hpp).
struct Case {
  const char* name;
  int ranks;
  gpt2::Options o;
};

gpt2::Options on(MeshShape mesh, ScheduleKind kind = ScheduleKind::one_f_one_b, int m = 1,
                 int v = 1, ZeroPolicy zero = {}, bool sp = false) {
  gpt2::Options o = test::small_options(mesh, v == 2 && mesh.pp == 4 ? 8 : 4);
  o.schedule = kind;
  o.microbatches = m;
  o.virtual_stages = v;
  o.zero = zero;
  o.sequence_parallel = sp;
  const int unit = m * mesh.dp;  // the batch: a multiple of DP x m, at least 8 sequences
  o.batch = unit * ((8 + unit - 1) / unit);
  return o;
}

std::vector<Case> gpt2_meshes() {
  return {{"one process", 1, on({1, 1, 1})},
          {"TP2", 2, on({2, 1, 1})},
          {"TP2 SP", 2, on({2, 1, 1}, ScheduleKind::one_f_one_b, 1, 1, {}, true)},
          {"TP4", 4, on({4, 1, 1})},
          {"TP4 SP", 4, on({4, 1, 1}, ScheduleKind::one_f_one_b, 1, 1, {}, true)},
          {"PP2 GPipe m=2", 2, on({1, 2, 1}, ScheduleKind::gpipe, 2)},
          {"PP2 1F1B m=3", 2, on({1, 2, 1}, ScheduleKind::one_f_one_b, 3)},
          {"PP2 interleaved v=2 m=2", 2, on({1, 2, 1}, ScheduleKind::interleaved, 2, 2)},
          {"PP2 ZB-H1 m=4", 2, on({1, 2, 1}, ScheduleKind::zb_h1, 4)},
          {"PP2 ZB-V m=4", 2, on({1, 2, 1}, ScheduleKind::zbv, 4, 2)},
          {"PP4 1F1B m=4", 4, on({1, 4, 1}, ScheduleKind::one_f_one_b, 4)},
          {"DP2 ZeRO-0", 2, on({1, 1, 2}, ScheduleKind::one_f_one_b, 1, 1, {0})},
          {"DP2 ZeRO-1", 2, on({1, 1, 2}, ScheduleKind::one_f_one_b, 1, 1, {1})},
          {"DP2 ZeRO-2 m=2", 2, on({1, 1, 2}, ScheduleKind::one_f_one_b, 2, 1, {2})},
          {"DP2 ZeRO-3 m=2", 2, on({1, 1, 2}, ScheduleKind::one_f_one_b, 2, 1, {3})},
          {"DP4 ZeRO-3", 4, on({1, 1, 4}, ScheduleKind::one_f_one_b, 1, 1, {3})},
          {"PP2 ZB-H1 x DP2 ZeRO-2", 4, on({1, 2, 2}, ScheduleKind::zb_h1, 4, 1, {2})},
          {"TP2-PP2-DP2 ZeRO-1", 8, on({2, 2, 2}, ScheduleKind::one_f_one_b, 4, 1, {1})},
          {"TP2 SP-PP2-DP2 ZeRO-3", 8, on({2, 2, 2}, ScheduleKind::one_f_one_b, 2, 1, {3}, true)}};
}

// The meshes of the list with as many ranks as the world, each run by run(world, o): a mesh runs
// in the CTest entry of its own rank count (emulated.1ranks .. 8ranks), once.
template <class Run>
void for_meshes(Run&& run) {
  for (const Case& m : gpt2_meshes()) {
    if (m.ranks != test::world().size()) continue;
    INFO(std::string(m.name));
    run(test::world(), m.o);
  }
}

// float or bf16 storage: the emulated device against the CPU backend on the same mesh.
template <class S>
void same_bits_as_cpu(const Comm& comm, const gpt2::Options& o) {
  const TokenSource data = TokenSource::synthetic(o.model.vocab);
  gpt2::Trainer<float, S, Cpu> cpu(comm, o, data);
  gpt2::Trainer<float, S, Emulated> device(comm, o, data);
  test::check_same_bits(device, cpu);
}

}  // namespace

TEST_CASE("emulated device: GPT-2 in double matches the single-process reference") {
  for_meshes([](const Comm& c, const gpt2::Options& o) {
    test::check_parity<double, double, Emulated>(c, o, 3, 1e-10);
  });
}

TEST_CASE("emulated device: GPT-2 in float and bf16 mixed precision, bit for bit as the CPU") {
  for_meshes([](const Comm& c, const gpt2::Options& o) {
    // DP over more than 2 ranks sums in an order MPI's nonblocking collectives choose, which
    // the CPU path's shared window does not share: bit for bit where the sums are the same
    if (o.mesh.dp > 2) return;
    same_bits_as_cpu<float>(c, o);
    same_bits_as_cpu<bf16>(c, o);
  });
}

TEST_CASE("emulated device: Llama matches its CPU single-process run in double") {
  for_meshes([](const Comm& comm, const gpt2::Options& o) {
    if (o.mesh.tp > 2) return;  // 2 KV heads: TP at most 2
    const llama::Config c = test::small_llama();
    const TokenSource data = TokenSource::synthetic(c.vocab);
    const Comm self = comm.split(comm.rank(), 0, "self");
    TrainOptions one = o;
    one.mesh = {1, 1, 1};
    one.sequence_parallel = false;
    one.microbatches = 1;
    one.schedule = ScheduleKind::one_f_one_b;
    one.virtual_stages = 1;
    one.zero = ZeroPolicy{};
    llama::Trainer<double, double, Emulated> run(comm, llama::Model(c), o, data);
    llama::Trainer<double> ref(self, llama::Model(c), one, data);
    test::check_against_single_process(run, ref);
  });
}

TEST_CASE("emulated device: Llama in float and bf16, bit for bit as the CPU") {
  for_meshes([](const Comm& comm, const gpt2::Options& o) {
    if (o.mesh.tp > 2 || o.mesh.dp > 2) return;
    const llama::Config c = test::small_llama();
    const TokenSource data = TokenSource::synthetic(c.vocab);
    llama::Trainer<float, float, Cpu> cpu(comm, llama::Model(c), o, data);
    llama::Trainer<float, float, Emulated> device(comm, llama::Model(c), o, data);
    test::check_same_bits(device, cpu);
    llama::Trainer<float, bf16, Cpu> cpu16(comm, llama::Model(c), o, data);
    llama::Trainer<float, bf16, Emulated> device16(comm, llama::Model(c), o, data);
    test::check_same_bits(device16, cpu16);
  });
}

// What crosses between host and device in a step (backend/device_buffer.hpp's crossings):
// token ids up once per microbatch (inputs on the first stage, targets on the last), the
// tokens' losses down once per microbatch (last stage), the gradient norm's sums down once per
// step. Nothing else: activations, parameters and gradients stay on the device.
TEST_CASE("emulated device: a step's host-device crossings are its tokens, losses and norm") {
  for_meshes([](const Comm& comm, const gpt2::Options& o) {
    if (o.mesh.pp != comm.size() || o.virtual_stages != 1 || o.schedule == ScheduleKind::gpipe)
      return;
    gpt2::Trainer<float, float, Emulated> t(comm, o, TokenSource::synthetic(o.model.vocab));
    (void)t.step();  // the first step allocates; count the second
    const backend::Crossings before = backend::crossings();
    (void)t.step();
    const backend::Crossings after = backend::crossings();
    const int m = o.microbatches, stage = t.mesh().stage();
    const bool first = stage == 0, last = stage == o.mesh.pp - 1;
    CHECK(after.uploads - before.uploads == std::uint64_t(m * (first + last)));
    CHECK(after.downloads - before.downloads == std::uint64_t(m * last + 1));
    const std::uint64_t tokens = std::uint64_t(o.rows_per_microbatch()) * o.model.seq;
    // the norm: one double per 4096 gradient elements (backend::SquareSums), a few hundred
    // bytes here, where the parameters alone are tens of kilobytes
    const std::uint64_t losses = m * last * tokens * sizeof(float);
    const std::uint64_t norm = after.download_bytes - before.download_bytes - losses;
    CHECK(norm > 0);
    CHECK(norm * 64 < memory_stats().current(MemoryKind::parameters));
    CHECK(after.upload_bytes - before.upload_bytes ==
          std::uint64_t(m * (first + last)) * tokens * sizeof(std::int32_t));
  });
}

// Selective recomputation (--recompute selective) on the device: PP2 under ZB-H1 (its B
// recomputes the attention probabilities into device scratch) against none, bit for bit.
TEST_CASE("emulated device: GPT-2 under selective recomputation, bit for bit as none") {
  TRIDENT_RANKS(2, comm);
  gpt2::Options o = on({1, 2, 1}, ScheduleKind::zb_h1, 4);
  const TokenSource data = TokenSource::synthetic(o.model.vocab);
  gpt2::Trainer<float, float, Emulated> none(comm, o, data);
  o.recompute = Recompute::selective;
  gpt2::Trainer<float, float, Emulated> selective(comm, o, data);
  test::check_same_bits(selective, none);
}
