// The single-process model: the whole model's backward against finite differences; the
// initialisation by global index (a shard is a slice of the whole); deterministic data that no
// mesh can change; AdamW and the learning-rate schedule against hand computation.
#include <cmath>
#include <fstream>

#include <trident/models/gpt2/model.hpp>
#include <trident/models/gpt2/reference.hpp>
#include <trident/train/mfu.hpp>

#include "mpi_test.hpp"

using namespace trident;

TEST_CASE("whole model: every parameter's gradient against central finite differences") {
  gpt2::Config c{11, 5, 2, 8, 2, 3};  // vocab 11, seq 5, 2 layers, hidden 8, 2 heads
  gpt2::ReferenceGPT<double> model(c);
  const TokenSource data = TokenSource::synthetic(c.vocab);
  const Microbatch batch = sample_rows(data, 1, 0, 0, 3, c.seq);
  model.forward_backward(batch);
  const auto grads = model.grads();  // a copy: forward_backward overwrites them
  // relative error per tensor: max |numeric - analytic| / max |analytic| over the sampled
  // elements (an element's own gradient may be ~1e-6, below the differences' round-off)
  const double h = 1e-5;
  double worst = 0;
  for (const ParamSpec& spec : model.specs()) {
    std::vector<double>& p = model.params().at(spec.name);
    double diff = 0, scale = 0;
    for (std::size_t k = 0; k < p.size(); k += 1 + p.size() / 13) {  // >= 13 elements each
      const double keep = p[k];
      p[k] = keep + h;
      const double up = model.forward_backward(batch);
      p[k] = keep - h;
      const double down = model.forward_backward(batch);
      p[k] = keep;
      const double g = grads.at(spec.name)[k];
      diff = std::max(diff, std::abs((up - down) / (2 * h) - g));
      scale = std::max(scale, std::abs(g));
    }
    INFO(spec.name << ": max difference " << diff << ", max gradient " << scale);
    CHECK(diff <= 1e-6 * scale);
    worst = std::max(worst, diff / scale);
  }
  MESSAGE("largest relative difference, analytic vs numeric: " << worst);
}

TEST_CASE("initialisation by global index: a TP shard of a parameter is the slice of the whole") {
  gpt2::Config c{67, 16, 2, 32, 8, 11};
  const UnitSpec unit = gpt2::block_unit(c, 1);
  const UnitLayout whole = layout_unit(unit, 1, 0);
  std::vector<double> full(whole.numel);
  auto init = [&](const ParamSpec& p, std::uint64_t g) { return gpt2::initial_value(c, p, g); };
  initialise_unit(whole, init, full.data());
  for (int r = 0; r < 4; ++r) {
    const UnitLayout part = layout_unit(unit, 4, r);
    std::vector<double> mine(part.numel);
    initialise_unit(part, init, mine.data());
    for (std::size_t k = 0; k < part.params.size(); ++k) {
      const LocalParam &p = part.params[k], &w = whole.params[k];
      for (std::int64_t i = 0; i < p.layout.local_rows(); ++i)
        for (std::int64_t j = 0; j < p.layout.local_cols(); ++j)
          CHECK(mine[p.offset + i * p.layout.local_cols() + j] ==
                full[w.offset + p.layout.global_offset(i, j, r)]);
    }
  }
  // GPT-2's scheme: std 0.02, residual projections 0.02 / sqrt(2 L), LayerNorm gain 1
  double s2 = 0, r2 = 0;
  const LocalParam& qkv = whole.params[gpt2::kQkvW];
  const LocalParam& proj = whole.params[gpt2::kMlpProjW];
  for (std::size_t k = 0; k < qkv.numel; ++k) s2 += full[qkv.offset + k] * full[qkv.offset + k];
  for (std::size_t k = 0; k < proj.numel; ++k) r2 += full[proj.offset + k] * full[proj.offset + k];
  CHECK(std::sqrt(s2 / qkv.numel) == doctest::Approx(0.02).epsilon(0.05));
  CHECK(std::sqrt(r2 / proj.numel) ==
        doctest::Approx(0.02 / std::sqrt(2.0 * c.layers)).epsilon(0.05));
  CHECK(full[whole.params[gpt2::kLn1W].offset] == 1.0);
  CHECK(full[whole.params[gpt2::kLn1B].offset] == 0.0);
}

TEST_CASE("data: a row of the global batch depends only on (seed, step, row)") {
  const TokenSource data = TokenSource::from_file(default_corpus(), 32);
  const Microbatch all = sample_rows(data, 5, 3, 0, 8, 32);
  const Microbatch tail = sample_rows(data, 5, 3, 6, 2, 32);  // rows 6 and 7 alone
  for (int t = 0; t < 32; ++t)
    for (int b = 0; b < 2; ++b) {
      CHECK(tail.inputs[t * 2 + b] == all.inputs[t * 8 + 6 + b]);
      CHECK(tail.targets[t * 2 + b] == all.targets[t * 8 + 6 + b]);
    }
  for (int t = 0; t + 1 < 32; ++t) CHECK(all.targets[t * 8] == all.inputs[(t + 1) * 8]);  // shifted
  CHECK(sample_rows(data, 5, 4, 0, 8, 32).inputs != all.inputs);  // another step, another batch
  CHECK_THROWS_WITH_AS(TokenSource::from_file("/nonexistent/corpus.txt", 32),
                       "cannot read the data file '/nonexistent/corpus.txt'", Error);
}

TEST_CASE("AdamW: one step by hand; warm-up and cosine schedule; clipping factor") {
  AdamW opt;
  opt.lr = 0.1;
  opt.beta1 = 0.9;
  opt.beta2 = 0.99;
  opt.eps = 1e-8;
  opt.weight_decay = 0.5;
  double p = 2.0, m = 0, v = 0;
  const double g = 0.3;
  opt.update(&p, &g, &m, &v, 1, /*t=*/1, 0.1, /*decay=*/true, /*scale=*/1.0);
  // m_hat = g, v_hat = g^2: p = 2 (1 - 0.1 * 0.5) - 0.1 * g / (|g| + eps)
  CHECK(p == doctest::Approx(2.0 * 0.95 - 0.1 * 0.3 / (0.3 + 1e-8)));
  CHECK(m == doctest::Approx(0.03));
  CHECK(v == doctest::Approx(0.01 * 0.09));
  opt.warmup = 10;
  opt.steps = 110;
  opt.min_lr = 0.01;
  CHECK(opt.lr_at(0) == doctest::Approx(0.01));
  CHECK(opt.lr_at(9) == doctest::Approx(0.1));
  CHECK(opt.lr_at(60) == doctest::Approx(0.01 + 0.5 * 0.09));  // half way down the cosine
  CHECK(opt.lr_at(110) == doctest::Approx(0.01));
  // the schedule's defaults follow the run (optim/adamw.hpp): unset, they come from its length
  const AdamW fresh;
  const AdamW run = fresh.for_run(200);
  CHECK(run.steps == 200);
  CHECK(run.warmup == 10);  // 5% of the steps
  CHECK(run.min_lr == doctest::Approx(fresh.lr / 10));
  CHECK(run.lr_at(150) < fresh.lr);                       // decaying
  CHECK(fresh.lr_at(0) == doctest::Approx(fresh.lr));     // length unknown: no warm-up,
  CHECK(fresh.lr_at(5000) == doctest::Approx(fresh.lr));  // no decay on a length nobody chose
  CHECK(opt.for_run(200).steps == 110);                   // what is set stays
  CHECK(opt.for_run(200).warmup == 10);
  opt.clip = 1.0;
  CHECK(opt.clip_scale(0.5) == 1.0);
  CHECK(opt.clip_scale(4.0) == doctest::Approx(0.25));
}

TEST_CASE("MFU: GPT-2 124M's model FLOPs per token, a GPU's datasheet peak, no peak no MFU") {
  // 3 x (L (24 h^2 + 4 s h) + 2 h V) with L 12, h 768, s 1024, V 50304 (Narayanan et al. 2021
  // §5.1, the figure bench/gpu/README.md divides by): 854,654,976
  const gpt2::Model gpt2_124m(gpt2::Config{50304, 1024, 12, 768, 12, 0});
  CHECK(model_flops_per_token(gpt2_124m) == 854654976.0);
  CHECK(datasheet_peak_flops("cuda:0 (NVIDIA H200)", "bf16", 4) == 989e12);
  CHECK(datasheet_peak_flops("cuda:1 (NVIDIA H100 PCIe)", "float", 4) == 51e12);
  CHECK(datasheet_peak_flops("cuda:0 (NVIDIA H100 80GB HBM3)", "double", 8) == 67e12);
  CHECK(datasheet_peak_flops("cuda:0 (NVIDIA A100-SXM4-80GB)", "float", 4) == 19.5e12);
  CHECK(datasheet_peak_flops("cuda:0 (NVIDIA GeForce RTX 4090)", "bf16", 4) == 0);
  HardwarePeak peak;
  CHECK(std::isnan(model_flops_utilization(854654976.0, 1e5, peak)));  // unknown peak
  peak.flops = 989e12;
  CHECK(model_flops_utilization(854654976.0, 1e5, peak) ==
        doctest::Approx(0.0864161).epsilon(1e-6));
  CHECK(std::isnan(model_flops_utilization(854654976.0, std::nan(""), peak)));  // no measured step
}
