// trident/io/bar_chart_svg.hpp: a stacked bar chart as SVG — memory per rank by kind, in the
// style of pp/svg.hpp's pipeline figures.
//
// One bar per label (a rank, a configuration), stacked bottom to top by series (parameters,
// gradients, optimizer states, activations, ...), each segment with a <title> tooltip. An
// optional marker per bar (a black tick with a diamond) shows a second figure for the same bar,
// e.g. the cost model's prediction next to the measured stack. Below: the labels, a second
// line under each (e.g. "tp,pp,dp"), the legend, and notes that say what the bars show (one line
// each; the chart widens to fit them). Plain text SVG.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
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
  std::vector<std::string> notes;              // lines under the legend: what dominates, and why
};

// Colours of the memory kinds (core/memory.hpp's order), then two spares.
inline std::string kind_colour(int k) {
  const double hues[] = {210, 140, 30, 350, 270, 60, 180};
  return pp::detail::hsl(hues[k % 7], 0.55, 0.55);
}

namespace bar_chart_detail {

using pp::detail::number;
using pp::detail::xml_escape;

inline std::string exact(double v) {  // a data attribute's number, to the last bit
  char s[32];
  std::snprintf(s, sizeof s, "%.17g", v);
  return s;
}

inline void check(const BarChart& c) {
  const std::size_t bars = c.labels.size();
  for (const BarSeries& s : c.series)
    require(s.values.size() == bars, "bar chart '" + c.title + "': series '" + s.name + "' has " +
                                         std::to_string(s.values.size()) + " values for " +
                                         std::to_string(bars) + " bars");
  require(c.markers.empty() || c.markers.size() == bars,
          "bar chart '" + c.title + "': one marker per bar");
}

// The largest figure drawn: the highest stack or marker (1 when there is none).
inline double top_value(const BarChart& c) {
  double top = 0;
  for (std::size_t b = 0; b < c.labels.size(); ++b) {
    double stack = 0;
    for (const BarSeries& s : c.series) stack += s.values[b];
    top = std::max(top, stack);
    if (!c.markers.empty() && std::isfinite(c.markers[b])) top = std::max(top, c.markers[b]);
  }
  return top <= 0 ? 1 : top;
}

// Where everything goes, in pixels: the plot (left, top, plot_w x plot_h, its base line), one
// slot per bar, and the legend's items wrapped into rows that fit the width.
struct Layout {
  double step, axis_max;  // the y axis: tick step and top
  double left = 76, top = 44, plot_h = 300, slot, bar_w, plot_w, width, base, legend, height;
  std::vector<std::string> items;             // legend: the series, then the marker
  std::vector<std::pair<double, double>> at;  // x, y of each legend item

  double y_of(double v) const { return base - v / axis_max * plot_h; }
};

inline Layout layout(const BarChart& c) {
  Layout l;
  const std::size_t bars = c.labels.size();
  const double top = top_value(c);
  l.step = pp::detail::tick_step(top);
  l.axis_max = std::ceil(top / l.step) * l.step;
  l.slot = std::max(56.0, 640.0 / std::max<std::size_t>(bars, 1));
  l.bar_w = l.slot * 0.6;
  l.plot_w = l.slot * bars;
  l.width = l.left + l.plot_w + 24;
  for (const std::string& note : c.notes)  // wide enough for the notes (~6.6 px a character)
    l.width = std::max(l.width, l.left + 6.6 * note.size() + 24);
  l.width = std::max(l.width, l.left + 9.2 * c.title.size() + 24);  // and the title (16 px, bold)
  l.base = l.top + l.plot_h;
  l.legend = l.base + (c.sublabels.empty() ? 40 : 56);
  for (const BarSeries& s : c.series) l.items.push_back(s.name);
  if (!c.markers.empty()) l.items.push_back(c.marker_name);
  for (const std::string& item : l.items) {
    const double w = 34 + 7 * item.size();
    double ix =
        l.at.empty() ? l.left : l.at.back().first + 34 + 7 * l.items[l.at.size() - 1].size();
    double iy = l.at.empty() ? l.legend : l.at.back().second;
    if (!l.at.empty() && ix + w > l.width) {
      ix = l.left;
      iy += 22;
    }
    l.at.push_back({ix, iy});
  }
  l.height = (l.at.empty() ? l.legend : l.at.back().second) + 30 + 18 * c.notes.size();
  return l;
}

// The header, the title, the y axis's grid and ticks, and its unit.
inline void write_frame(std::ostream& svg, const BarChart& c, const Layout& l) {
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << l.width << "\" height=\""
      << l.height << "\" viewBox=\"0 0 " << l.width << ' ' << l.height
      << "\" font-family=\"Helvetica, Arial, sans-serif\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
      << "<text x=\"" << l.left << "\" y=\"26\" font-size=\"16\" font-weight=\"bold\">"
      << xml_escape(c.title) << "</text>\n";
  for (int i = 0; i * l.step <= l.axis_max * (1 + 1e-9); ++i) {
    const double y = l.y_of(i * l.step);
    svg << "<line x1=\"" << l.left << "\" y1=\"" << y << "\" x2=\"" << l.left + l.plot_w
        << "\" y2=\"" << y << "\" stroke=\"#e6e6e6\"/><text x=\"" << l.left - 6 << "\" y=\""
        << y + 4 << "\" font-size=\"11\" text-anchor=\"end\">" << number(i * l.step) << "</text>\n";
  }
  svg << "<text x=\"16\" y=\"" << l.top + l.plot_h / 2
      << "\" font-size=\"12\" text-anchor=\"middle\" "
      << "transform=\"rotate(-90 16 " << l.top + l.plot_h / 2 << ")\">" << xml_escape(c.unit)
      << "</text>\n";
}

// Bar b: its stacked segments, its marker, its label and sublabel.
inline void write_bar(std::ostream& svg, const BarChart& c, const Layout& l, std::size_t b) {
  const double x = l.left + b * l.slot + (l.slot - l.bar_w) / 2;
  double stack = 0;
  for (const BarSeries& s : c.series) {
    const double v = s.values[b];
    if (v <= 0) continue;
    svg << "<rect x=\"" << x << "\" y=\"" << l.y_of(stack + v) << "\" width=\"" << l.bar_w
        << "\" height=\"" << l.y_of(stack) - l.y_of(stack + v) << "\" fill=\"" << s.colour
        << "\" stroke=\"#ffffff\" stroke-width=\"0.8\" data-label=\"" << xml_escape(c.labels[b])
        << "\" data-series=\"" << xml_escape(s.name) << "\" data-value=\"" << exact(v)
        << "\"><title>" << xml_escape(c.labels[b]) << ": " << xml_escape(s.name) << " " << number(v)
        << ' ' << xml_escape(c.unit) << "</title></rect>\n";
    stack += v;
  }
  if (!c.markers.empty() && std::isfinite(c.markers[b])) {
    const double y = l.y_of(c.markers[b]), mid = x + l.bar_w / 2;
    svg << "<g data-label=\"" << xml_escape(c.labels[b])
        << "\" data-series=\"marker\" data-value=\"" << exact(c.markers[b]) << "\"><title>"
        << xml_escape(c.labels[b]) << ": " << xml_escape(c.marker_name) << ' '
        << number(c.markers[b]) << ' ' << xml_escape(c.unit) << "</title><line x1=\"" << x - 4
        << "\" y1=\"" << y << "\" x2=\"" << x + l.bar_w + 4 << "\" y2=\"" << y
        << "\" stroke=\"#000\" stroke-width=\"1.5\" stroke-dasharray=\"4 2\"/><path d=\"M " << mid
        << ' ' << y - 5 << " L " << mid + 5 << ' ' << y << " L " << mid << ' ' << y + 5 << " L "
        << mid - 5 << ' ' << y << " Z\" fill=\"#000\"/></g>\n";
  }
  svg << "<text x=\"" << x + l.bar_w / 2 << "\" y=\"" << l.base + 18
      << "\" font-size=\"12\" text-anchor=\"middle\">" << xml_escape(c.labels[b]) << "</text>\n";
  if (b < c.sublabels.size())
    svg << "<text x=\"" << x + l.bar_w / 2 << "\" y=\"" << l.base + 34
        << "\" font-size=\"10\" fill=\"#555555\" text-anchor=\"middle\">"
        << xml_escape(c.sublabels[b]) << "</text>\n";
}

// The x axis's base line and the legend: a swatch per series, a dashed line for the marker;
// then the notes.
inline void write_legend(std::ostream& svg, const BarChart& c, const Layout& l) {
  svg << "<line x1=\"" << l.left << "\" y1=\"" << l.base << "\" x2=\"" << l.left + l.plot_w
      << "\" y2=\"" << l.base << "\" stroke=\"#000\"/>\n";
  for (std::size_t i = 0; i < l.items.size(); ++i) {
    const auto [lx, ly] = l.at[i];
    if (i < c.series.size())
      svg << "<rect x=\"" << lx << "\" y=\"" << ly << "\" width=\"18\" height=\"14\" fill=\""
          << c.series[i].colour << "\"/>";
    else
      svg << "<line x1=\"" << lx << "\" y1=\"" << ly + 7 << "\" x2=\"" << lx + 18 << "\" y2=\""
          << ly + 7 << "\" stroke=\"#000\" stroke-width=\"1.5\" stroke-dasharray=\"4 2\"/>";
    svg << "<text x=\"" << lx + 24 << "\" y=\"" << ly + 11 << "\" font-size=\"12\">"
        << xml_escape(l.items[i]) << "</text>\n";
  }
  double y = (l.at.empty() ? l.legend : l.at.back().second) + 40;
  for (const std::string& note : c.notes) {
    svg << "<text x=\"" << l.left << "\" y=\"" << y << "\" font-size=\"12\" fill=\"#333333\">"
        << xml_escape(note) << "</text>\n";
    y += 18;
  }
}

}  // namespace bar_chart_detail

inline std::string bar_chart_svg(const BarChart& c) {
  bar_chart_detail::check(c);
  const bar_chart_detail::Layout l = bar_chart_detail::layout(c);
  std::ostringstream svg;
  svg.setf(std::ios::fixed);
  svg.precision(2);
  bar_chart_detail::write_frame(svg, c, l);
  for (std::size_t b = 0; b < c.labels.size(); ++b) bar_chart_detail::write_bar(svg, c, l, b);
  bar_chart_detail::write_legend(svg, c, l);
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
