// examples/comparison.hpp: the runs examples/zero_vs_3d, examples/zero_vs_3d_cluster and
// bench/predict compare on 8 ranks — one model, pure ZeRO-3 next to 3D meshes with ZeRO-1 — on
// one node, and on 2 nodes joined by a slow link.
#pragma once

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

#include <trident/costmodel/predict.hpp>
#include <trident/models/gpt2/trainer.hpp>
#include <trident/train/report.hpp>

namespace trident::examples {

// printf's text, each of its lines wrapped at spaces to at most 100 characters (a word longer
// than that stays whole; an indented line's continuations indented 2 more): the prose and legends
// around the examples' tables.
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
inline void
print_wrapped(const char* format, ...) {
  std::va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  std::string text(std::size_t(std::vsnprintf(nullptr, 0, format, args)), ' ');
  va_end(args);
  std::vsnprintf(&text[0], text.size() + 1, format, again);
  va_end(again);
  constexpr std::size_t width = 100;
  std::string out;
  for (std::size_t start = 0;;) {  // each line of the text, greedily cut at spaces
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string line = text.substr(start, end - start);
    const std::size_t indent = line.find_first_not_of(' ');  // kept, +2, on the lines it wraps to
    const std::string more(indent == std::string::npos || indent == 0 ? 0 : indent + 2, ' ');
    while (line.size() > width) {
      std::size_t cut = line.rfind(' ', width);
      if (cut == std::string::npos || cut <= more.size()) cut = line.find(' ', width);
      if (cut == std::string::npos) break;
      out += line.substr(0, cut) + '\n';
      line = more + line.substr(cut + 1);
    }
    out += line;
    if (end == text.size()) break;
    out += '\n';
    start = end + 1;
  }
  std::fputs(out.c_str(), stdout);
}

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

// The cluster comparison of examples/zero_vs_3d_cluster (2 nodes x 4 ranks, a slow link; the
// sizes are explained there): a byte vocabulary, L=2, C=384, T=64; 24 sequences.
inline gpt2::Config cluster_model() {
  gpt2::Config c = comparison_model();
  c.vocab = 256;
  c.seq = 64;
  c.layers = 2;
  c.hidden = 384;
  return c;
}
inline constexpr int kClusterBatch = 24;
inline std::vector<NamedRun> cluster_runs(const gpt2::Config& model, int batch) {
  return named_runs(model, batch,
                    {{"ZeRO-3 DP8", {1, 1, 8}, 3},
                     {"TP4-PP2 ZeRO-1", {4, 2, 1}, 1},
                     {"TP2-PP2-DP2 ZeRO-1", {2, 2, 2}, 1},
                     {"TP8 ZeRO-1", {8, 1, 1}, 1}});
}

// Each rank's bytes per step per axis as the cost model predicts them (its stage's), in the
// run report's form (costmodel/inter_node.hpp's inter_node_bytes reads them).
inline std::vector<RankFigures> predicted_ranks(const gpt2::Options& o,
                                                const costmodel::Prediction& p) {
  std::vector<RankFigures> ranks(std::size_t(o.mesh.product()));
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const costmodel::AxisFigures& b = p.stages[r / (o.mesh.tp * o.mesh.dp)].bytes;
    ranks[r].formula = {b.tp, b.pp, b.dp, b.emb};
  }
  return ranks;
}

}  // namespace trident::examples
