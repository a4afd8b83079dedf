// trident/io/line_chart_svg.hpp: a line chart as SVG — the loss and the held-out loss over the
// steps, tokens/s and MFU — in the style of io/bar_chart_svg.hpp.
//
// Each series is a polyline with a dot per point; a dot carries its series, x and y in data
// attributes at full precision (data-series, data-x, data-y), so that a reader of the page (or a
// test) gets back the numbers drawn, and a <title> tooltip. Points that are not finite are left
// out. Plain text SVG.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../pp/svg.hpp"
#include "bar_chart_svg.hpp"

namespace trident::io {

struct LineSeries {
  std::string name, colour;  // colour: "#rrggbb"
  std::vector<double> xs, ys;
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<LineSeries> series;
};

namespace line_chart_detail {

using pp::detail::number;
using pp::detail::xml_escape;

using bar_chart_detail::exact;

// The range of the finite values of `pick` over all series, widened when empty or flat.
template <class Pick>
std::pair<double, double> range(const LineChart& c, Pick pick) {
  double lo = INFINITY, hi = -INFINITY;
  for (const LineSeries& s : c.series)
    for (std::size_t i = 0; i < s.xs.size(); ++i)
      if (std::isfinite(s.xs[i]) && std::isfinite(s.ys[i])) {
        lo = std::min(lo, pick(s, i));
        hi = std::max(hi, pick(s, i));
      }
  if (!(lo <= hi)) return {0, 1};
  if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) return {lo - 0.5, hi + 0.5};
  return {lo, hi};
}

}  // namespace line_chart_detail

inline std::string line_chart_svg(const LineChart& c) {
  using namespace line_chart_detail;
  for (const LineSeries& s : c.series)
    require(s.xs.size() == s.ys.size(), "line chart '" + c.title + "': series '" + s.name +
                                            "' has " + std::to_string(s.xs.size()) + " x and " +
                                            std::to_string(s.ys.size()) + " y");
  const double left = 76, top = 44, w = 560, h = 240, base = top + h;
  const auto [x0, x1] = range(c, [](const LineSeries& s, std::size_t i) { return s.xs[i]; });
  auto [y0, y1] = range(c, [](const LineSeries& s, std::size_t i) { return s.ys[i]; });
  const double pad = (y1 - y0) * 0.05;
  y0 -= pad;
  y1 += pad;
  auto X = [&, x0 = x0, x1 = x1](double x) { return left + (x - x0) / (x1 - x0) * w; };
  auto Y = [&](double y) { return base - (y - y0) / (y1 - y0) * h; };
  std::ostringstream svg;
  svg.setf(std::ios::fixed);
  svg.precision(2);
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << left + w + 150 << "\" height=\""
      << base + 56 << "\" font-family=\"Helvetica, Arial, sans-serif\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n<text x=\"" << left
      << "\" y=\"26\" font-size=\"16\" font-weight=\"bold\">" << xml_escape(c.title) << "</text>\n";
  for (int i = 0; i <= 4; ++i) {  // five ticks on each axis
    const double yv = y0 + (y1 - y0) * i / 4, xv = x0 + (x1 - x0) * i / 4;
    svg << "<line x1=\"" << left << "\" y1=\"" << Y(yv) << "\" x2=\"" << left + w << "\" y2=\""
        << Y(yv) << "\" stroke=\"#e6e6e6\"/><text x=\"" << left - 6 << "\" y=\"" << Y(yv) + 4
        << "\" font-size=\"11\" text-anchor=\"end\">" << number(yv) << "</text><text x=\"" << X(xv)
        << "\" y=\"" << base + 16 << "\" font-size=\"11\" text-anchor=\"middle\">" << number(xv)
        << "</text>\n";
  }
  svg << "<line x1=\"" << left << "\" y1=\"" << base << "\" x2=\"" << left + w << "\" y2=\"" << base
      << "\" stroke=\"#000\"/><text x=\"" << left + w / 2 << "\" y=\"" << base + 36
      << "\" font-size=\"12\" text-anchor=\"middle\">" << xml_escape(c.x_label)
      << "</text><text x=\"16\" y=\"" << top + h / 2
      << "\" font-size=\"12\" text-anchor=\"middle\" "
      << "transform=\"rotate(-90 16 " << top + h / 2 << ")\">" << xml_escape(c.y_label)
      << "</text>\n";
  for (std::size_t k = 0; k < c.series.size(); ++k) {
    const LineSeries& s = c.series[k];
    svg << "<polyline fill=\"none\" stroke=\"" << s.colour << "\" stroke-width=\"1.6\" points=\"";
    for (std::size_t i = 0; i < s.xs.size(); ++i)
      if (std::isfinite(s.xs[i]) && std::isfinite(s.ys[i]))
        svg << X(s.xs[i]) << ',' << Y(s.ys[i]) << ' ';
    svg << "\"/>\n";
    for (std::size_t i = 0; i < s.xs.size(); ++i)
      if (std::isfinite(s.xs[i]) && std::isfinite(s.ys[i]))
        svg << "<circle cx=\"" << X(s.xs[i]) << "\" cy=\"" << Y(s.ys[i]) << "\" r=\"2.6\" fill=\""
            << s.colour << "\" data-series=\"" << xml_escape(s.name) << "\" data-x=\""
            << exact(s.xs[i]) << "\" data-y=\"" << exact(s.ys[i]) << "\"><title>"
            << xml_escape(s.name) << ": " << number(s.ys[i]) << " at " << number(s.xs[i])
            << "</title></circle>\n";
    svg << "<rect x=\"" << left + w + 14 << "\" y=\"" << top + 20 * k << "\" width=\"14\" "
        << "height=\"10\" fill=\"" << s.colour << "\"/><text x=\"" << left + w + 34 << "\" y=\""
        << top + 20 * k + 10 << "\" font-size=\"12\">" << xml_escape(s.name) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace trident::io
