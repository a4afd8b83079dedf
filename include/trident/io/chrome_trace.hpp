// trident/io/chrome_trace.hpp: a pipeline Timeline as a Chrome trace (Trace Event Format).
//
// One track per rank, named by a thread_name metadata event, and one complete event ("ph": "X")
// per span, with ts and dur in microseconds (span times are taken as seconds; a simulated
// timeline's cost unit becomes one second). Perfetto (ui.perfetto.dev) and chrome://tracing open
// the file. Names follow the figures: F3 / B3 for the forward / backward of microbatch 3 (F3c1
// for its chunk 1), W3 for its weight-gradient pass (zero-bubble schedules), "recv 3" / "send 3"
// for communication.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../pp/timeline.hpp"

namespace trident::io {

// rank_names: one per rank, or empty for "stage 0", "stage 1", ...
inline nlohmann::json chrome_trace(const pp::Timeline& timeline,
                                   const std::vector<std::string>& rank_names) {
  require(rank_names.empty() || static_cast<int>(rank_names.size()) == timeline.ranks,
          "chrome_trace: " + std::to_string(rank_names.size()) + " rank names for " +
              std::to_string(timeline.ranks) + " ranks");
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"tid", 0},
                    {"args", {{"name", "pipeline"}}}});
  for (int r = 0; r < timeline.ranks; ++r) {
    const std::string name = rank_names.empty() ? "stage " + std::to_string(r) : rank_names[r];
    events.push_back(
        {{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", r}, {"args", {{"name", name}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", r},
                      {"args", {{"sort_index", r}}}});
  }
  for (const pp::Interval& s : timeline.intervals) {
    std::string name;
    switch (s.kind) {
      case pp::IntervalKind::forward:
        name = "F";
        break;
      case pp::IntervalKind::backward:
        name = "B";
        break;
      case pp::IntervalKind::weight:
        name = "W";
        break;
      case pp::IntervalKind::send:
        name = "send ";
        break;
      case pp::IntervalKind::recv:
        name = "recv ";
        break;
      case pp::IntervalKind::idle:
        name = "idle";
        break;
    }
    if (s.kind != pp::IntervalKind::idle && s.microbatch >= 0) name += std::to_string(s.microbatch);
    if (s.chunk > 0) name += "c" + std::to_string(s.chunk);
    events.push_back({{"name", name},
                      {"cat", pp::to_string(s.kind)},
                      {"ph", "X"},
                      {"ts", s.begin * 1e6},
                      {"dur", (s.end - s.begin) * 1e6},
                      {"pid", 0},
                      {"tid", s.rank},
                      {"args", {{"microbatch", s.microbatch}, {"chunk", s.chunk}}}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

// Writes chrome_trace(timeline, rank_names) to `path`; trident::Error naming the file if it
// cannot.
inline void write_chrome_trace(const std::string& path, const pp::Timeline& timeline,
                               const std::vector<std::string>& rank_names = {}) {
  const nlohmann::json trace = chrome_trace(timeline, rank_names);
  std::ofstream out(path);
  if (out) out << trace.dump() << '\n';
  require(static_cast<bool>(out), "cannot write the Chrome trace '" + path + "'");
}

}  // namespace trident::io
