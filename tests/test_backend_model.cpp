// GPT-2 written against a backend type (models/gpt2/backend_*.hpp), run on backend::Cpu, against
// the single-process reference (gpt2::ReferenceGPT) in double on the same data and initial
// weights: every step's loss and gradient norm and every parameter after 3 AdamW steps within
// 1e-10 relative —
//   through the trainer (gpt2::BackendModel<Cpu> in the generic DecoderStage, its ZeRO store
//   and AdamW): one rank; PP2 1F1B and GPipe; DP2 with ZeRO-3; TP2; PP2 x DP2 and TP2 x PP2
//   (4 ranks); TP2 and TP2 x PP2 with the TP collectives through host staging (a stand-in
//   device backend);
//   gpt2::BackendGPT<double, Cpu>: one rank with parameters, gradients, moments and the AdamW
//   update on the backend (what tests/cuda/test_model_gpu.cu runs on a GPU); also in float,
//   within float's rounding (whole-model 2-norm 1e-4, as tests/test_parity_precision.cpp).
// Sequence parallelism is refused with one clear Error.
#include <trident/backend/cpu/cpu.hpp>
#include <trident/models/gpt2/backend_model.hpp>

#include "cuda/model_checks.hpp"
#include "parity.hpp"

using namespace trident;
using backend::Cpu;
using CpuModel = gpt2::BackendModel<Cpu>;

namespace {
// backend::Cpu standing in for a device: host memory that says it is not, so the layers' TP
// collectives (tp/backend_group.hpp) take DeviceComm's host-staging path (device -> host ->
// MPI -> host -> device, the copies memcpy) — the path of ranks sharing one GPU.
struct StagedCpu : Cpu {
  static constexpr const char* kName = "cpu (staged)";
  static constexpr bool kHostMemory = false;
};

template <class M = CpuModel>
void run(int ranks, MeshShape mesh, pp::ScheduleKind kind, int m, ZeroPolicy zero = {}) {
  auto comm = test::first_ranks(ranks, test::current_test_name());
  if (!comm) return;
  gpt2::Options o = test::small_options(mesh);
  o.schedule = kind;
  o.microbatches = m;
  o.batch = 2 * m * mesh.dp;
  o.zero = zero;
  INFO(pp::to_string(kind) << " PP=" << mesh.pp << " DP=" << mesh.dp << " ZeRO-" << zero.stage
                           << " m=" << m);
  test::check_parity<double, double, M>(*comm, o, 3, 1e-10);
}
}  // namespace

TEST_CASE("backend GPT-2 on backend::Cpu through the trainer, one rank, equals the reference") {
  run(1, {1, 1, 1}, pp::ScheduleKind::one_f_one_b, 1);
  run(1, {1, 1, 1}, pp::ScheduleKind::one_f_one_b, 3);  // gradient accumulation
}

TEST_CASE("backend GPT-2 on backend::Cpu: PP2 (1F1B, GPipe) and DP2 ZeRO-3 equal the reference") {
  run(2, {1, 2, 1}, pp::ScheduleKind::one_f_one_b, 3);
  run(2, {1, 2, 1}, pp::ScheduleKind::gpipe, 2);
  ZeroPolicy zero3;
  zero3.stage = 3;
  run(2, {1, 1, 2}, pp::ScheduleKind::one_f_one_b, 2, zero3);
}

TEST_CASE("backend GPT-2 on backend::Cpu: PP2 x DP2 with ZeRO-1 equals the reference") {
  ZeroPolicy zero1;
  zero1.stage = 1;
  run(4, {1, 2, 2}, pp::ScheduleKind::one_f_one_b, 2, zero1);
}

TEST_CASE("backend GPT-2 on backend::Cpu: TP2 and TP2 x PP2 equal the reference") {
  run(2, {2, 1, 1}, pp::ScheduleKind::one_f_one_b, 2);
  run(4, {2, 2, 1}, pp::ScheduleKind::one_f_one_b, 3);
}

TEST_CASE("backend GPT-2, TP collectives through host staging: TP2 and TP2 x PP2 equal it too") {
  run<gpt2::BackendModel<StagedCpu>>(2, {2, 1, 1}, pp::ScheduleKind::one_f_one_b, 2);
  run<gpt2::BackendModel<StagedCpu>>(4, {2, 2, 1}, pp::ScheduleKind::one_f_one_b, 3);
}

TEST_CASE("backend GPT-2 with sequence parallelism is refused with one clear Error") {
  TRIDENT_RANKS(2, comm);
  gpt2::Options o = test::small_options({2, 1, 1});
  o.sequence_parallel = true;
  try {
    Trainer<CpuModel, double> trainer(comm, CpuModel(o.model), o,
                                      TokenSource::synthetic(o.model.vocab));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("cpu backend's GPT-2 stage has no sequence parallelism") !=
          std::string::npos);
  }
}

// Its blocks run whole (stage_costs' first_half is 0): auto keeps whole layers (the PP2 cases
// above), and a stage boundary inside a block is refused before anything is built.
TEST_CASE("backend GPT-2: a stage boundary inside a block is refused with one clear Error") {
  TRIDENT_RANKS(2, comm);
  CHECK(CpuModel(test::small_options({1, 2, 1}).model).stage_costs().first_half == 0);
  gpt2::Options o = test::small_options({1, 2, 1});
  o.pp_layers = {2.5, 1.5};
  try {
    Trainer<CpuModel, double> trainer(comm, CpuModel(o.model), o,
                                      TokenSource::synthetic(o.model.vocab));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "--pp-layers: 2.5 puts a stage boundary inside a layer, but this model's layers run "
          "whole");
  }
}

TEST_CASE("BackendGPT: one rank, parameters and AdamW on backend::Cpu, equals the reference") {
  TRIDENT_RANKS(1, comm);  // one rank: no communication
  (void)comm;
  test::check_backend_gpt<Cpu, double>({});
}

// float against the double reference: the rounding differs, so the parameters are compared
// over the whole model, with tests/parity_precision's float tolerance (measured here: 4e-6).
TEST_CASE("BackendGPT in float on backend::Cpu is within float's rounding of the reference") {
  TRIDENT_RANKS(1, comm);  // one rank: no communication
  (void)comm;
  test::check_backend_gpt<Cpu, float>({1e-6, 1e-5, 1e-4, true});
}
