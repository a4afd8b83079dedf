// examples/comparison.hpp: the runs examples/zero_vs_3d, examples/zero_vs_3d_cluster and
// bench/predict compare on 8 ranks — one model, pure ZeRO-3 next to 3D meshes with ZeRO-1.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include <trident/models/gpt2/trainer.hpp>

namespace trident::examples {

struct NamedRun {
  std::string name;  // "ZeRO-3 DP8"
  gpt2::Options options;
};

// The model and global batch the comparison below uses by default (L=8, C=256, H=8, V=4096,
// T=128; 16 sequences).
inline gpt2::Config comparison_model() {
  return {4096, 128, 8, 256, 8, 1337};
}
inline constexpr int kComparisonBatch = 16;

// One run per shape: a mesh and its ZeRO stage, 1F1B with m = 2 PP microbatches when PP > 1.
struct RunShape {
  const char* name;
  MeshShape mesh;
  int zero;
};
inline std::vector<NamedRun> named_runs(const gpt2::Config& model, int batch,
                                        std::initializer_list<RunShape> shapes) {
  std::vector<NamedRun> runs;
  for (const RunShape& s : shapes) {
    gpt2::Options o;
    o.model = model;
    o.mesh = s.mesh;
    o.zero.stage = s.zero;
    o.schedule = pp::ScheduleKind::one_f_one_b;
    o.microbatches = s.mesh.pp > 1 ? 2 * s.mesh.pp : 1;
    o.batch = batch;
    runs.push_back({s.name, o});
  }
  return runs;
}

// The comparison of examples/zero_vs_3d on 8 ranks, one model: pure ZeRO-3 over DP = 8, and
// 3D meshes with ZeRO-1.
inline std::vector<NamedRun> comparison_runs(const gpt2::Config& model, int batch) {
  return named_runs(model, batch,
                    {{"ZeRO-3 DP8", {1, 1, 8}, 3},
                     {"TP2-PP2-DP2 ZeRO-1", {2, 2, 2}, 1},
                     {"TP2-DP4 ZeRO-1", {2, 1, 4}, 1},
                     {"PP2-DP4 ZeRO-1", {1, 2, 4}, 1},
                     {"TP4-DP2 ZeRO-1", {4, 1, 2}, 1}});
}

}  // namespace trident::examples
