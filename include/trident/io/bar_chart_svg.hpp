// trident/io/bar_chart_svg.hpp: a stacked bar chart as SVG — memory per rank by kind, in the
// style of pp/svg.hpp's pipeline figures.
//
// One bar per label (a rank, a configuration), stacked bottom to top by series (parameters,
// gradients, optimizer states, activations, ...), each segment with a <title> tooltip. An
// optional marker per bar (a black tick with a diamond) shows a second figure for the same bar,
// e.g. the cost model's prediction next to the measured stack. Below: the labels, a second
// line under each (e.g. "tp,pp,dp"), and the legend. Plain text SVG.
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../pp/svg.hpp"

namespace trident::io {

struct BarSeries {
  std::string name;
  std::string colour;          // "#rrggbb"
  std::vector<double> values;  // one per bar
};

struct BarChart {
  std::string title, unit;                     // unit of the values, e.g. "MiB"
  std::vector<std::string> labels, sublabels;  // under each bar (sublabels may be empty)
  std::vector<BarSeries> series;               // stacked bottom to top
  std::vector<double> markers;                 // one per bar, or empty; NaN: no marker
  std::string marker_name;                     // legend text of the markers
};

// Colours of the memory kinds (core/memory.hpp's order), then two spares.
inline std::string kind_colour(int k) {
  const double hues[] = {210, 140, 30, 350, 270, 60, 180};
  return pp::detail::hsl(hues[k % 7], 0.55, 0.55);
}

inline std::string bar_chart_svg(const BarChart& c) {
  const std::size_t bars = c.labels.size();
  for (const BarSeries& s : c.series)
    require(s.values.size() == bars, "bar chart '" + c.title + "': series '" + s.name + "' has " +
                                         std::to_string(s.values.size()) + " values for " +
                                         std::to_string(bars) + " bars");
  require(c.markers.empty() || c.markers.size() == bars,
          "bar chart '" + c.title + "': one marker per bar");
  double top_value = 0;
  for (std::size_t b = 0; b < bars; ++b) {
    double stack = 0;
    for (const BarSeries& s : c.series) stack += s.values[b];
    top_value = std::max(top_value, stack);
    if (!c.markers.empty() && std::isfinite(c.markers[b]))
      top_value = std::max(top_value, c.markers[b]);
  }
  if (top_value <= 0) top_value = 1;
  const double step = pp::detail::tick_step(top_value);
  const double axis_max = std::ceil(top_value / step) * step;
  const double left = 76, top = 44, plot_h = 300,
               slot = std::max(56.0, 640.0 / std::max<std::size_t>(bars, 1));
  const double bar_w = slot * 0.6, plot_w = slot * bars, width = left + plot_w + 24;
  const double base = top + plot_h, legend = base + (c.sublabels.empty() ? 40 : 56);
  // legend items (series, then the marker), wrapped into rows that fit the width
  std::vector<std::string> items;
  for (const BarSeries& s : c.series) items.push_back(s.name);
  if (!c.markers.empty()) items.push_back(c.marker_name);
  std::vector<std::pair<double, double>> at;  // x, y of each item
  for (const std::string& item : items) {
    const double w = 34 + 7 * item.size();
    double ix = at.empty() ? left : at.back().first + 34 + 7 * items[at.size() - 1].size();
    double iy = at.empty() ? legend : at.back().second;
    if (!at.empty() && ix + w > width) ix = left, iy += 22;
    at.push_back({ix, iy});
  }
  const double height = (at.empty() ? legend : at.back().second) + 30;
  auto y_of = [&](double v) { return base - v / axis_max * plot_h; };
  using pp::detail::number;
  using pp::detail::xml_escape;

  std::ostringstream svg;
  svg.setf(std::ios::fixed);
  svg.precision(2);
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << ' ' << height
      << "\" font-family=\"Helvetica, Arial, sans-serif\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
      << "<text x=\"" << left << "\" y=\"26\" font-size=\"16\" font-weight=\"bold\">"
      << xml_escape(c.title) << "</text>\n";
  for (int i = 0; i * step <= axis_max * (1 + 1e-9); ++i) {  // y axis: grid and ticks
    const double y = y_of(i * step);
    svg << "<line x1=\"" << left << "\" y1=\"" << y << "\" x2=\"" << left + plot_w << "\" y2=\""
        << y << "\" stroke=\"#e6e6e6\"/><text x=\"" << left - 6 << "\" y=\"" << y + 4
        << "\" font-size=\"11\" text-anchor=\"end\">" << number(i * step) << "</text>\n";
  }
  svg << "<text x=\"16\" y=\"" << top + plot_h / 2 << "\" font-size=\"12\" text-anchor=\"middle\" "
      << "transform=\"rotate(-90 16 " << top + plot_h / 2 << ")\">" << xml_escape(c.unit)
      << "</text>\n";
  for (std::size_t b = 0; b < bars; ++b) {
    const double x = left + b * slot + (slot - bar_w) / 2;
    double stack = 0;
    for (const BarSeries& s : c.series) {
      const double v = s.values[b];
      if (v <= 0) continue;
      svg << "<rect x=\"" << x << "\" y=\"" << y_of(stack + v) << "\" width=\"" << bar_w
          << "\" height=\"" << y_of(stack) - y_of(stack + v) << "\" fill=\"" << s.colour
          << "\" stroke=\"#ffffff\" stroke-width=\"0.8\"><title>" << xml_escape(c.labels[b]) << ": "
          << xml_escape(s.name) << " " << number(v) << ' ' << xml_escape(c.unit)
          << "</title></rect>\n";
      stack += v;
    }
    if (!c.markers.empty() && std::isfinite(c.markers[b])) {
      const double y = y_of(c.markers[b]), mid = x + bar_w / 2;
      svg << "<g><title>" << xml_escape(c.labels[b]) << ": " << xml_escape(c.marker_name) << ' '
          << number(c.markers[b]) << ' ' << xml_escape(c.unit) << "</title><line x1=\"" << x - 4
          << "\" y1=\"" << y << "\" x2=\"" << x + bar_w + 4 << "\" y2=\"" << y
          << "\" stroke=\"#000\" stroke-width=\"1.5\" stroke-dasharray=\"4 2\"/><path d=\"M " << mid
          << ' ' << y - 5 << " L " << mid + 5 << ' ' << y << " L " << mid << ' ' << y + 5 << " L "
          << mid - 5 << ' ' << y << " Z\" fill=\"#000\"/></g>\n";
    }
    svg << "<text x=\"" << x + bar_w / 2 << "\" y=\"" << base + 18
        << "\" font-size=\"12\" text-anchor=\"middle\">" << xml_escape(c.labels[b]) << "</text>\n";
    if (b < c.sublabels.size())
      svg << "<text x=\"" << x + bar_w / 2 << "\" y=\"" << base + 34
          << "\" font-size=\"10\" fill=\"#555555\" text-anchor=\"middle\">"
          << xml_escape(c.sublabels[b]) << "</text>\n";
  }
  svg << "<line x1=\"" << left << "\" y1=\"" << base << "\" x2=\"" << left + plot_w << "\" y2=\""
      << base << "\" stroke=\"#000\"/>\n";
  for (std::size_t i = 0; i < items.size(); ++i) {  // legend
    const auto [lx, ly] = at[i];
    if (i < c.series.size())
      svg << "<rect x=\"" << lx << "\" y=\"" << ly << "\" width=\"18\" height=\"14\" fill=\""
          << c.series[i].colour << "\"/>";
    else
      svg << "<line x1=\"" << lx << "\" y1=\"" << ly + 7 << "\" x2=\"" << lx + 18 << "\" y2=\""
          << ly + 7 << "\" stroke=\"#000\" stroke-width=\"1.5\" stroke-dasharray=\"4 2\"/>";
    svg << "<text x=\"" << lx + 24 << "\" y=\"" << ly + 11 << "\" font-size=\"12\">"
        << xml_escape(items[i]) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

// Writes bar_chart_svg(chart) to `path`; trident::Error naming the file if it cannot.
inline void write_bar_chart_svg(const std::string& path, const BarChart& chart) {
  std::ofstream out(path);
  if (out) out << bar_chart_svg(chart);
  require(static_cast<bool>(out), "cannot write the bar chart SVG '" + path + "'");
}

}  // namespace trident::io
