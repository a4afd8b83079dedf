// trident/plan/planner.hpp: every valid way to train a model on a cluster, ranked.
//
// rank_configurations() walks the configurations a Search allows (meshes TP x CP x PP x DP = GPUs,
// CP only where it splits the sequence in 2 CP chunks (the zigzag split), ZeRO
// stages, microbatch sizes, interleaving, sequence parallelism, recomputation; always the 1F1B
// schedule, which needs no more time than GPipe and less memory), keeps the valid ones that
// fit in memory and ranks them by predicted step time, then by memory. A Search can fix any
// of TP, CP, PP, DP; sizes that no configuration can have are an Error that says why.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "estimate.hpp"

namespace trident::plan {

struct Search {
  int tp = 0, pp = 0, dp = 0, cp = 0;  // 0: any size; otherwise that size only
  std::vector<int> zero_stages{0, 1, 2, 3};
  std::vector<Recompute> recompute{Recompute::none, Recompute::selective, Recompute::full};
  int max_microbatch_size = 8;
  int max_virtual_stages = 8;
  bool keep_unfit =
      false;  // also return configurations that do not fit (ranked after those that do)
};

struct Candidate {
  Config config;
  Estimate estimate;
};

// The Error for sizes fixed by `search` that no configuration can have.
inline void check_fixed_sizes(const ModelSpec& m, const ClusterSpec& cluster, int global_batch,
                              const Search& search) {
  const auto n = [](long long x) { return std::to_string(x); };
  if (global_batch < 1) fail("the global batch must be at least 1, got " + n(global_batch));
  if (search.tp < 0 || search.pp < 0 || search.dp < 0 || search.cp < 0)
    fail("TP, CP, PP and DP must be at least 1 (or 0: any)");
  const int cp = std::max(search.cp, 1);
  if (search.tp && search.pp && search.dp &&
      static_cast<long long>(search.tp) * cp * search.pp * search.dp != cluster.gpus)
    fail(mesh_mismatch(search.tp, search.pp, search.dp, cluster.gpus, cp));
  const long long fixed = static_cast<long long>(std::max(search.tp, 1)) * cp *
                          std::max(search.pp, 1) * std::max(search.dp, 1);
  const auto size = [&](int s) { return s ? n(s) : std::string("any"); };
  if (cluster.gpus % fixed != 0)
    fail("TP=" + size(search.tp) + (search.cp ? " x CP=" + n(search.cp) : "") +
         " x PP=" + size(search.pp) + " x DP=" + size(search.dp) + ": " + n(fixed) +
         " does not divide " + n(cluster.gpus) + " GPUs");
  if (search.cp > 1 && m.seq % (2 * search.cp) != 0)
    fail("CP=" + n(search.cp) + " does not split the sequence of " + n(m.seq) + " tokens of " +
         m.name + " into " + n(2 * search.cp) + " chunks (zigzag: 2 per rank)");
  if (search.tp && (m.heads % search.tp != 0 || m.hidden % search.tp != 0))
    fail("TP=" + n(search.tp) + " does not divide the " + n(m.heads) + " heads and hidden size " +
         n(m.hidden) + " of " + m.name);
  if (search.pp && m.layers % search.pp != 0)
    fail("PP=" + n(search.pp) + " does not divide the " + n(m.layers) + " layers of " + m.name);
  if (search.dp && global_batch % search.dp != 0)
    fail("DP=" + n(search.dp) + " does not divide the global batch of " + n(global_batch) +
         " sequences");
}

inline std::vector<int> divisors(int n, int at_most) {
  std::vector<int> d;
  for (int k = 1; k <= std::min(n, at_most); ++k)
    if (n % k == 0) d.push_back(k);
  return d;
}

// The configurations of `m` on `cluster` for `global_batch` sequences per step, best first.
inline std::vector<Candidate> rank_configurations(const ModelSpec& m, const ClusterSpec& cluster,
                                                  int global_batch, const Precision& p,
                                                  const Search& search = {}) {
  validate(m);
  validate(cluster);
  check_fixed_sizes(m, cluster, global_batch, search);
  const auto allowed = [](int fixed, int size) { return fixed == 0 || fixed == size; };
  std::vector<Candidate> found;
  // every microbatching, schedule refinement and memory policy of mesh c
  auto walk_mesh = [&](Config c) {
    const int per_dp_rank = global_batch / c.dp;
    for (int b : divisors(per_dp_rank, search.max_microbatch_size)) {
      c.microbatch_size = b;
      c.microbatches = per_dp_rank / b;
      for (int v : divisors(m.layers / c.pp, c.pp > 1 ? search.max_virtual_stages : 1)) {
        c.virtual_stages = v;
        c.schedule = v > 1 ? pp::ScheduleKind::interleaved : pp::ScheduleKind::one_f_one_b;
        for (bool sp : {false, true}) {
          if (sp && c.tp == 1) continue;
          c.sequence_parallel = sp;
          for (Recompute r : search.recompute) {
            c.recompute = r;
            for (int zero : search.zero_stages) {
              c.zero = zero;
              if (!invalid_reason(m, cluster, c).empty()) continue;
              const Estimate e = estimate(m, cluster, c, p);
              if (e.fits || search.keep_unfit) found.push_back({c, e});
            }
          }
        }
      }
    }
  };
  Config c;
  for (int tp : divisors(cluster.gpus, cluster.gpus)) {
    if (!allowed(search.tp, tp) || m.heads % tp != 0 || m.hidden % tp != 0) continue;
    c.tp = tp;
    for (int cp : divisors(cluster.gpus / tp, std::max(1, m.seq / 2))) {
      if (!allowed(search.cp, cp) || (cp > 1 && m.seq % (2 * cp) != 0)) continue;
      c.cp = cp;
      for (int pp : divisors(cluster.gpus / (tp * cp), m.layers)) {
        c.pp = pp;
        c.dp = cluster.gpus / (tp * cp * pp);
        if (allowed(search.pp, pp) && allowed(search.dp, c.dp) && m.layers % pp == 0 &&
            global_batch % c.dp == 0)
          walk_mesh(c);
      }
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const Candidate& a, const Candidate& b) {
    if (a.estimate.fits != b.estimate.fits) return a.estimate.fits;
    if (a.estimate.step_s != b.estimate.step_s) return a.estimate.step_s < b.estimate.step_s;
    return a.estimate.memory.total() < b.estimate.memory.total();
  });
  return found;
}

}  // namespace trident::plan
