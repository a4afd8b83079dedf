// examples/memory_chart.hpp: zero_vs_3d's memory bar charts — each rank's measured memory by
// kind (core/memory.hpp's kinds) with the predicted total as a marker, and notes under the chart
// that say what its tallest bar is made of and why its largest part is large.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <trident/io/bar_chart_svg.hpp>
#include <trident/train/report.hpp>

namespace trident::examples {

// One SVG per configuration: each rank's measured memory by kind, predicted total as a marker.
inline io::BarChart memory_chart(const std::string& title,
                                 const std::vector<const RankFigures*>& ranks,
                                 const std::vector<std::string>& labels,
                                 const std::vector<double>& predicted) {
  io::BarChart c;
  c.title = title;
  c.unit = "MiB";
  c.labels = labels;
  const char* names[] = {"parameters", "gradients", "optimizer states", "activations (peak)",
                         "comm buffers (peak)"};
  double RankFigures::*kinds[] = {&RankFigures::parameters, &RankFigures::gradients,
                                  &RankFigures::optimizer, &RankFigures::activations,
                                  &RankFigures::buffers};
  for (int k = 0; k < 5; ++k) {
    io::BarSeries s{names[k], io::kind_colour(k), {}};
    for (const RankFigures* r : ranks) s.values.push_back(r->*kinds[k] / (1024.0 * 1024.0));
    c.series.push_back(s);
  }
  for (const RankFigures* r : ranks)
    c.sublabels.push_back(std::to_string(int(r->tp)) + "," + std::to_string(int(r->pp)) + "," +
                          std::to_string(int(r->dp)));
  for (double p : predicted) c.markers.push_back(p / (1024.0 * 1024.0));
  c.marker_name = "predicted: model states + activations";
  return c;
}

// Notes under a memory chart: what its tallest bar is made of, and why its largest part is large.
inline std::vector<std::string> memory_notes(const io::BarChart& c) {
  std::size_t tallest = 0;
  double top = 0;
  auto stack = [&](std::size_t b) {
    double sum = 0;
    for (const io::BarSeries& s : c.series) sum += s.values[b];
    return sum;
  };
  for (std::size_t b = 0; b < c.labels.size(); ++b)
    if (stack(b) > top) {
      top = stack(b);
      tallest = b;
    }
  struct Part {
    const char* name;
    double value;
    const char* why;
  };
  auto value = [&](std::size_t k) { return c.series[k].values[tallest]; };
  std::vector<Part> parts = {
      {"model states", value(0) + value(1) + value(2),
       "parameters, gradients and optimizer states: ZeRO shards them over DP, TP and PP divide "
       "them"},
      {"activations", value(3),
       "each rank's microbatch rows through its layers: TP and PP divide them, ZeRO does not"},
      {"comm buffers", value(4),
       "gathered parameters (ZeRO-3: a layer's whole weights at a time) and reductions"}};
  std::stable_sort(parts.begin(), parts.end(),
                   [](const Part& a, const Part& b) { return a.value > b.value; });
  char line[240];
  std::snprintf(line, sizeof line, "tallest: %s (%s), %.1f %s:", c.labels[tallest].c_str(),
                tallest < c.sublabels.size() ? c.sublabels[tallest].c_str() : "", top,
                c.unit.c_str());
  std::string first = line;
  for (const Part& p : parts) {
    std::snprintf(line, sizeof line, " %s %.1f (%.0f%%)%s", p.name, p.value, 100 * p.value / top,
                  &p == &parts.back() ? "" : ",");
    first += line;
  }
  return {first, std::string("the most: ") + parts[0].name + ", " + parts[0].why};
}

}  // namespace trident::examples
