// trident/train/report_figures.hpp: the run report's figures — one rank's measured memory by
// kind, traffic per axis (the counted buffers, and the bytes they put on the wire) and times,
// next to their formulas (formulas.hpp); gathered on world rank 0 by make_report
// (train/report.hpp), printed by train/report_text.hpp.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "formulas.hpp"

namespace trident {

// One rank's figures; the fields are doubles so that all ranks' figures gather in one call.
struct RankFigures {
  double tp = 0, pp = 0, dp = 0, cp = 0;                // mesh coordinates
  double parameters = 0, gradients = 0, optimizer = 0;  // bytes held now
  double activations = 0, buffers = 0;                  // peak bytes during the measured steps
  ModelStates states;                                   // formula
  Traffic traffic, formula;                             // bytes per step
  double compute = 0, end = 0;  // seconds per step in forward/backward; last span's end
  double cp_wait = 0;           // seconds per step waiting for the CP ring (not overlapped)
  double peak_live = 0, cached = 0, peak_rss = 0;  // bytes: all Buffers at once, cache, RSS
  // bytes one whole layer keeps per microbatch: measured (0: no whole layer here), the model's
  // formula (NaN: not declared)
  double layer_activations = 0, layer_formula = 0;
  double psi = 0;         // Psi: this rank's parameters (its padded shard), elements
  double activation = 0;  // b s h: the activation a stage hands on per microbatch, bytes
  Traffic wire;           // bytes per step this rank sends on the wire (core/stats.hpp)
};
static_assert(sizeof(RankFigures) % sizeof(double) == 0);

struct RunReport {
  std::vector<RankFigures> ranks;  // world rank order (world rank 0 only)
  // bubble: idle share of all ranks' step (the spans); busiest_idle: the busiest rank's alone, the
  // fill and drain the schedule leaves on the critical stage (the rest of `bubble` is the other
  // stages' lighter load, which no schedule fills)
  double bubble = 0, bubble_formula = 0, busiest_idle = 0;
  plan::Precision precision;  // bytes per element of the ZeRO formula (plan::trident_precision)
};

// CommStats' bytes per step on each axis, over `steps` steps.
inline Traffic measured_traffic(double steps) {
  auto bytes = [&](const char* axis) {
    return double(comm_stats().of(axis).total().bytes) / steps;
  };
  // received bytes are the other side of a send: count what this rank sends
  auto sent = [&](const char* axis) {
    return double(comm_stats().of(axis)[CommOp::send].bytes) / steps;
  };
  // the gradient reduction runs over "dp", or "dp_cp" when CP > 1 (mesh/mesh.hpp)
  return {bytes("tp"), sent("pp"), bytes("dp") + bytes("dp_cp"), bytes("emb"), sent("cp")};
}

// The bytes those buffers put on the wire, per step (core/stats.hpp, wire_bytes).
inline Traffic measured_wire(double steps) {
  auto wire = [&](const char* axis) { return wire_bytes(comm_stats().of(axis)) / steps; };
  return {wire("tp"), wire("pp"), wire("dp") + wire("dp_cp"), wire("emb"), wire("cp")};
}

}  // namespace trident
