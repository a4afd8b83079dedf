// Selective activation recomputation (Korthikanti et al. 2022 §5; `--recompute selective`) with
// GPT-2: a block keeps all but the attention core's probabilities, which its backward recomputes
// from the kept q, k, v with the forward's kernel (model/decoder_stage.hpp, cp/attention.hpp).
// Compared, in float on the CPU: every step's loss and gradient norm and every parameter after 3
// AdamW steps under selective against the same run under none, bit for bit (model_parity.hpp's
// check_same_bits) — one process; TP2 with SP; PP2 under 1F1B, ZB-H1 (also with a stage boundary
// inside a block) and ZB-V; DP2 with ZeRO-3 — and one layer's measured activation bytes against
// the model's formula and against none's minus exactly the probabilities' B H/t seq seq.
#include <string>
#include <utility>
#include <vector>

#include <trident/train/formulas.hpp>

#include "model_parity.hpp"
#include "parity.hpp"

using namespace trident;

namespace recompute_test {

// The small GPT-2 of the parity tests on `mesh`: 8 sequences in m microbatches.
gpt2::Options selective_run(MeshShape mesh, pp::ScheduleKind kind, int m, int v = 1,
                            ZeroPolicy zero = {}, bool sp = false, std::vector<double> split = {}) {
  gpt2::Options o = test::small_options(mesh, 4);
  o.schedule = kind;
  o.microbatches = m;
  o.virtual_stages = v;
  o.zero = zero;
  o.sequence_parallel = sp;
  o.pp_layers = std::move(split);
  return o;
}

// o under --recompute selective against o under none, bit for bit.
void same_bits_as_none(const Comm& comm, gpt2::Options o) {
  const TokenSource data = TokenSource::synthetic(o.model.vocab);
  o.recompute = Recompute::none;
  gpt2::Trainer<float> none(comm, o, data);
  o.recompute = Recompute::selective;
  gpt2::Trainer<float> selective(comm, o, data);
  test::check_same_bits(selective, none);
}

}  // namespace recompute_test

TEST_CASE("selective recomputation: one process, bit for bit as none") {
  TRIDENT_RANKS(1, comm);
  recompute_test::same_bits_as_none(
      comm, recompute_test::selective_run({1, 1, 1}, pp::ScheduleKind::one_f_one_b, 2));
}

TEST_CASE("selective recomputation: TP2 SP, PP2 (1F1B, ZB-H1, ZB-V), DP2 ZeRO-3, bit for bit") {
  TRIDENT_RANKS(2, comm);
  using pp::ScheduleKind;
  using recompute_test::selective_run;
  const struct {
    const char* name;
    gpt2::Options o;
  } cases[] = {{"TP2 SP", selective_run({2, 1, 1}, ScheduleKind::one_f_one_b, 1, 1, {}, true)},
               {"TP2", selective_run({2, 1, 1}, ScheduleKind::one_f_one_b, 2)},
               {"PP2 1F1B m=4", selective_run({1, 2, 1}, ScheduleKind::one_f_one_b, 4)},
               {"PP2 1F1B 1.5 + 2.5",
                selective_run({1, 2, 1}, ScheduleKind::one_f_one_b, 2, 1, {}, false, {1.5, 2.5})},
               {"PP2 ZB-H1 m=4", selective_run({1, 2, 1}, ScheduleKind::zb_h1, 4)},
               {"PP2 ZB-H1 2.5 + 1.5",
                selective_run({1, 2, 1}, ScheduleKind::zb_h1, 2, 1, {}, false, {2.5, 1.5})},
               {"PP2 ZB-V m=4", selective_run({1, 2, 1}, ScheduleKind::zbv, 4, 2)},
               {"DP2 ZeRO-3 m=2", selective_run({1, 1, 2}, ScheduleKind::one_f_one_b, 2, 1, {3})}};
  for (const auto& c : cases) {
    INFO(std::string(c.name));
    recompute_test::same_bits_as_none(comm, c.o);
  }
}

TEST_CASE(
    "selective recomputation: one layer keeps the model's formula, none's minus the "
    "probabilities") {
  TRIDENT_RANKS(2, comm);
  for (const bool sp : {false, true}) {
    gpt2::Options o =
        recompute_test::selective_run({2, 1, 1}, pp::ScheduleKind::one_f_one_b, 2, 1, {}, sp);
    const TokenSource data = TokenSource::synthetic(o.model.vocab);
    gpt2::Trainer<float> none(comm, o, data);
    o.recompute = Recompute::selective;
    gpt2::Trainer<float> selective(comm, o, data);
    (void)none.step();
    (void)selective.step();
    // B H/t seq seq floats: the attention probabilities of one microbatch on this TP rank
    const double probs = double(o.rows_per_microbatch()) * (o.model.heads / o.mesh.tp) *
                         o.model.seq * o.model.seq * sizeof(float);
    INFO("TP2" << (sp ? " SP" : "") << ": none " << none.chunk(0).layer_activation_bytes()
               << ", selective " << selective.chunk(0).layer_activation_bytes());
    CHECK(probs > 0);
    CHECK(selective.chunk(0).layer_activation_bytes() == layer_activation_formula(selective));
    CHECK(none.chunk(0).layer_activation_bytes() == layer_activation_formula(none));
    CHECK(selective.chunk(0).layer_activation_bytes() ==
          none.chunk(0).layer_activation_bytes() - probs);
  }
}
