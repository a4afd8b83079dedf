// trident/pp/svg.hpp: a Timeline drawn as the pipeline figures of the GPipe and Megatron-LM papers.
//
// Ranks are rows, time runs left to right. Each forward and backward pass is a box labelled with
// its pass and microbatch (F3, B3; zero-bubble schedules' weight-gradient pass W3) and coloured by
// the microbatch (a hue of its own): forward lighter, backward darker, W a greyer middle shade. For
// interleaved schedules, chunk c > 0 is hatched (one hatch direction per chunk). Time spent
// receiving a message in transit is a thin grey bar at the bottom of the row; the pale rest of a
// row is the bubble (idle), named in the legend. Rows may be named (a run's: rank, stage and
// TP/DP coordinates), the time axis carries its unit, and a caption may say how it was measured.
// Optionally a panel under the rows draws the activations each row holds over time (in_flight.hpp).
// The plot is 960 px wide, wider (up to 4800) when the shortest box would be under ~20 px. Plain
// text SVG; every box carries a <title> tooltip.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "detail/svg_text.hpp"
#include "in_flight.hpp"
#include "timeline.hpp"

namespace trident::pp {

// How a timeline is drawn: what its rows and boxes are called, its time unit, a caption.
struct SvgOptions {
  std::string row_label = "stage";      // rows are "stage r" ("rank r" for a run's ranks)
  std::string numbered = "microbatch";  // what a box's number counts
  std::vector<std::string> row_names;   // instead of "row_label r", one per row
  std::string time_unit;                // the axis' label, "time, <unit>" ("time" if empty)
  double time_scale = 1;                // axis value per unit of the timeline's clock
  std::string caption;                  // a line under the title
  bool in_flight = false;  // a panel under the rows: the activations each row holds over time
};

namespace detail {

// Microbatch colours: the m microbatches of a figure get m hues evenly spaced around the circle,
// so no two are the same, visited with a stride near m/phi^2 coprime to m, so that neighbours
// differ; backward darker, W (weight gradients) greyer between the two.
inline std::string box_colour(int microbatch, IntervalKind kind, int microbatches) {
  const int m = std::max(microbatches, microbatch + 1);
  int stride = std::max(1, int(std::lround(m * 0.381966)));
  while (std::gcd(stride, m) != 1) ++stride;
  const double hue = 360.0 * double(std::int64_t(microbatch) * stride % m) / m;
  return kind == IntervalKind::forward  ? hsl(hue, 0.70, 0.80)
         : kind == IntervalKind::weight ? hsl(hue, 0.30, 0.62)
                                        : hsl(hue, 0.60, 0.40);
}

// Where everything goes: margins, rows, the plot's scale, the axis and the legend.
struct SvgLayout {
  std::string numbered = "microbatch";  // what a box's number counts
  double left = 76, right = 24, top = 44, row = 28, gap = 6;
  int chunks = 1, microbatches = 0;
  double t0 = 0, span = 1, plot = 960, scale = 1, width = 0, axis = 0, legend = 0, height = 0;
  double panel = 0, strip = 44;  // the activations-in-flight panel above the axis, a strip a row
  static constexpr int per_line = 40;  // microbatch swatches per legend line

  explicit SvgLayout(const Timeline& timeline, const SvgOptions& o) {
    numbered = o.numbered;
    for (const std::string& name : o.row_names) left = std::max(left, 16 + 7.0 * name.size());
    if (!o.caption.empty()) top += 18;
    double shortest = 0;  // the shortest compute span, to be drawn at least ~20 px wide
    for (const Interval& s : timeline.intervals) {
      chunks = std::max(chunks, s.chunk + 1);
      microbatches = std::max(microbatches, s.microbatch + 1);
      if (is_compute(s.kind) && s.end > s.begin && (shortest == 0 || s.end - s.begin < shortest))
        shortest = s.end - s.begin;
    }
    t0 = timeline.start();
    span = timeline.makespan() > 0 ? timeline.makespan() : 1;
    plot = shortest > 0 ? std::clamp(20 * span / shortest, 960.0, 4800.0) : 960;
    scale = plot / span;
    width = left + plot + right;
    panel = o.in_flight ? 30 + timeline.ranks * strip : 0;
    axis = top + timeline.ranks * (row + gap) + panel;
    const int swatch_lines = (microbatches + per_line - 1) / per_line;
    legend = axis + 44;
    height = legend + 28 + swatch_lines * 22 + 8;
  }
  double y(int rank) const { return top + rank * (row + gap); }
};

// One compute box: filled, hatched for chunk > 0, numbered when wide enough.
inline void draw_box(std::ostringstream& svg, const Interval& s, const std::string& row_label,
                     const SvgLayout& l, double x, double y, double w) {
  const double h = l.row;
  const bool light = s.kind != IntervalKind::backward;  // dark text on it
  svg << "<g class=\"" << to_string(s.kind) << "\"><title>" << row_label << ' ' << s.rank << ' '
      << to_string(s.kind) << ' ' << xml_escape(l.numbered) << ' ' << s.microbatch << " chunk "
      << s.chunk << " [" << number(s.begin) << ", " << number(s.end) << ")</title>";
  svg << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h
      << "\" fill=\"" << box_colour(s.microbatch, s.kind, l.microbatches)
      << "\" stroke=\"#ffffff\" stroke-width=\"0.8\"/>";
  if (s.chunk > 0)
    svg << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h
        << "\" fill=\"url(#chunk" << s.chunk << ")\"/>";
  const char pass = s.kind == IntervalKind::forward  ? 'F'
                    : s.kind == IntervalKind::weight ? 'W'
                                                     : 'B';
  const std::string label = pass + std::to_string(s.microbatch);
  const double font = std::min(12.0, (w - 2) / (0.62 * label.size()));
  if (font >= 6)
    svg << "<text x=\"" << x + w / 2 << "\" y=\"" << y + h / 2 + font * 0.35 << "\" font-size=\""
        << font << "\" text-anchor=\"middle\" font-weight=\"bold\" fill=\""
        << (light ? "#1a1a1a" : "#ffffff") << "\">" << label << "</text>";
  svg << "</g>\n";
}

// The <svg> element, the hatch pattern of each chunk > 0, the background and the title.
inline void draw_header(std::ostringstream& svg, const SvgLayout& l, const std::string& title) {
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << l.width << "\" height=\""
      << l.height << "\" viewBox=\"0 0 " << l.width << ' ' << l.height
      << "\" font-family=\"Helvetica, Arial, sans-serif\">\n<defs>\n";
  const int angles[4] = {45, -45, 0, 90};
  for (int c = 1; c < l.chunks; ++c)
    svg << "<pattern id=\"chunk" << c
        << "\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
           "patternTransform=\"rotate("
        << angles[(c - 1) % 4] << ")\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#000\" "
        << "stroke-opacity=\"0.35\" stroke-width=\"1.5\"/></pattern>\n";
  svg << "</defs>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
      << "<text x=\"" << l.left << "\" y=\"26\" font-size=\"16\" font-weight=\"bold\">"
      << xml_escape(title) << "</text>\n";
}
inline void draw_caption(std::ostringstream& svg, const SvgLayout& l, const std::string& caption) {
  if (!caption.empty())
    svg << "<text x=\"" << l.left << "\" y=\"46\" font-size=\"12\" fill=\"#444444\">"
        << xml_escape(caption) << "</text>\n";
}

// The rows, with the bubble as their pale background, then every interval on them.
inline void draw_rows(std::ostringstream& svg, const SvgLayout& l, const Timeline& timeline,
                      const SvgOptions& o) {
  const std::string& row_label = o.row_label;
  for (int r = 0; r < timeline.ranks; ++r) {
    const double y = l.y(r);
    const std::string name = std::size_t(r) < o.row_names.size()
                                 ? o.row_names[std::size_t(r)]
                                 : row_label + ' ' + std::to_string(r);
    svg << "<text x=\"" << l.left - 8 << "\" y=\"" << y + l.row / 2 + 4
        << "\" font-size=\"12\" text-anchor=\"end\">" << xml_escape(name) << "</text>\n"
        << "<rect x=\"" << l.left << "\" y=\"" << y << "\" width=\"" << l.plot << "\" height=\""
        << l.row << "\" fill=\"#f2f2f2\"/>\n";
  }
  for (const Interval& s : timeline.intervals) {
    const double x = l.left + (s.begin - l.t0) * l.scale, w = (s.end - s.begin) * l.scale;
    const double y = l.y(s.rank);
    if (is_compute(s.kind))
      draw_box(svg, s, row_label, l, x, y, w);
    else if (s.kind == IntervalKind::send || s.kind == IntervalKind::recv)
      svg << "<rect class=\"" << to_string(s.kind) << "\" x=\"" << x << "\" y=\"" << y + l.row - 4
          << "\" width=\"" << w << "\" height=\"4\" fill=\""
          << (s.kind == IntervalKind::recv ? "#777777" : "#bbbbbb") << "\"/>\n";
  }
}

// The activations each row holds over time (pp/in_flight.hpp): a strip per row, scaled to all
// the microbatch-chunks (so that schedules compare across figures), the count as a filled
// staircase labelled with its peak where it first reaches it.
inline void draw_in_flight(std::ostringstream& svg, const SvgLayout& l, const Timeline& timeline,
                           const SvgOptions& o) {
  if (!o.in_flight) return;
  const std::vector<std::vector<HeldStep>> rows = activations_in_flight(timeline);
  int most = std::max(1, l.microbatches * l.chunks);  // all of them: GPipe fills the strip
  for (const auto& r : rows) most = std::max(most, peak_held(r));
  const double top = l.axis - l.panel + 24, end = l.left + l.plot;
  auto x = [&](double t) { return l.left + (t - l.t0) * l.scale; };
  svg << "<text x=\"" << l.left << "\" y=\"" << top - 8 << "\" font-size=\"12\" fill=\"#444444\">"
      << "activations held, in " << xml_escape(l.numbered)
      << (l.chunks > 1               ? "-chunks"
          : l.numbered.back() == 'h' ? "es"
                                     : "s")
      << " (each strip 0 to " << most << ", all of them), labelled with the peak</text>\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const double base = top + (r + 1) * l.strip - 4, height = l.strip - 14;
    auto y = [&](int n) { return base - height * n / most; };
    std::string path = "M " + number(x(rows[r].front().t)) + ' ' + number(base);
    for (const HeldStep& s : rows[r]) path += " H " + number(x(s.t)) + " V " + number(y(s.held));
    svg << "<text x=\"" << l.left - 8 << "\" y=\"" << base - 2
        << "\" font-size=\"11\" text-anchor=\"end\">" << xml_escape(o.row_label) << ' ' << r
        << "</text><line x1=\"" << l.left << "\" y1=\"" << base << "\" x2=\"" << end << "\" y2=\""
        << base << "\" stroke=\"#cccccc\"/>\n<path d=\"" << path << " H " << number(end)
        << " Z\" fill=\"#c9d7ea\" stroke=\"#2f5597\" stroke-width=\"1.5\"/>\n";
    const int peak = peak_held(rows[r]);
    for (const HeldStep& s : rows[r])
      if (s.held == peak) {
        svg << "<text x=\"" << x(s.t) + 3 << "\" y=\"" << y(peak) - 2
            << "\" font-size=\"10\" fill=\"#2f5597\">peak " << peak << "</text>\n";
        break;
      }
  }
}

inline void draw_time_axis(std::ostringstream& svg, const SvgLayout& l, const SvgOptions& o) {
  svg << "<line x1=\"" << l.left << "\" y1=\"" << l.axis << "\" x2=\"" << l.left + l.plot
      << "\" y2=\"" << l.axis << "\" stroke=\"#000\"/>\n";
  const double step = tick_step(l.span);
  for (int i = 0; i * step <= l.span * (1 + 1e-9); ++i) {
    const double x = l.left + i * step * l.scale;
    svg << "<line x1=\"" << x << "\" y1=\"" << l.axis << "\" x2=\"" << x << "\" y2=\"" << l.axis + 5
        << "\" stroke=\"#000\"/><text x=\"" << x << "\" y=\"" << l.axis + 18
        << "\" font-size=\"11\" text-anchor=\"middle\">" << number(i * step * o.time_scale)
        << "</text>\n";
  }
  svg << "<text x=\"" << l.left + l.plot << "\" y=\"" << l.axis + 32
      << "\" font-size=\"11\" text-anchor=\"end\">"
      << (o.time_unit.empty() ? "time" : "time, " + xml_escape(o.time_unit)) << "</text>\n";
}

template <class Pred>
bool any_interval(const Timeline& timeline, Pred pred) {
  return std::any_of(timeline.intervals.begin(), timeline.intervals.end(), pred);
}

// The legend: forward / backward (and W), chunks, messages, then each microbatch's colour.
inline void draw_legend(std::ostringstream& svg, const SvgLayout& l, const Timeline& timeline) {
  const double legend = l.legend;
  double x = l.left;
  auto item = [&](const std::string& fill, const std::string& overlay, const std::string& text) {
    svg << "<rect x=\"" << x << "\" y=\"" << legend << "\" width=\"18\" height=\"14\" fill=\""
        << fill << "\"/>";
    if (!overlay.empty())
      svg << "<rect x=\"" << x << "\" y=\"" << legend << "\" width=\"18\" height=\"14\" fill=\""
          << overlay << "\"/>";
    svg << "<text x=\"" << x + 24 << "\" y=\"" << legend + 11 << "\" font-size=\"12\">" << text
        << "</text>\n";
    x += 30 + 7 * text.size();
  };
  item("#f2f2f2", "", "idle: the bubble");
  item(box_colour(0, IntervalKind::forward, l.microbatches), "", "F: forward (lighter)");
  const bool split =
      any_interval(timeline, [](const Interval& s) { return s.kind == IntervalKind::weight; });
  item(box_colour(0, IntervalKind::backward, l.microbatches), "",
       split ? "B: input gradient (darker)" : "B: backward (darker)");
  if (split)
    item(box_colour(0, IntervalKind::weight, l.microbatches), "", "W: weight gradient (greyer)");
  for (int c = 0; c < l.chunks && l.chunks > 1; ++c)
    item("#dddddd", c ? "url(#chunk" + std::to_string(c) + ")" : "", "chunk " + std::to_string(c));
  if (any_interval(timeline, [](const Interval& s) {
        return s.kind == IntervalKind::send || s.kind == IntervalKind::recv;
      }))
    item("#777777", "", "receiving (in transit)");
  svg << "<text x=\"" << l.left << "\" y=\"" << legend + 36 << "\" font-size=\"12\">"
      << xml_escape(l.numbered) << ":</text>\n";
  for (int mb = 0; mb < l.microbatches; ++mb) {
    const double sx = l.left + 10 + 7 * l.numbered.size() + (mb % l.per_line) * 22,
                 sy = legend + 25 + (mb / l.per_line) * 22;
    svg << "<rect x=\"" << sx << "\" y=\"" << sy << "\" width=\"20\" height=\"16\" fill=\""
        << box_colour(mb, IntervalKind::backward, l.microbatches) << "\"/><text x=\"" << sx + 10
        << "\" y=\"" << sy + 12 << "\" font-size=\"10\" text-anchor=\"middle\" fill=\"#ffffff\">"
        << mb << "</text>\n";
  }
}

}  // namespace detail

inline std::string timeline_svg(const Timeline& timeline, const std::string& title,
                                const SvgOptions& options) {
  detail::SvgLayout layout(timeline, options);
  std::ostringstream svg;
  svg.setf(std::ios::fixed);
  svg.precision(2);
  detail::draw_header(svg, layout, title);
  detail::draw_caption(svg, layout, options.caption);
  detail::draw_rows(svg, layout, timeline, options);
  detail::draw_in_flight(svg, layout, timeline, options);
  detail::draw_time_axis(svg, layout, options);
  detail::draw_legend(svg, layout, timeline);
  svg << "</svg>\n";
  return svg.str();
}
// Rows are named `row_label` r: "stage" for a simulated pipeline, "rank" for a run's ranks; a
// box's number counts `numbered` (microbatches, or the ring's blocks).
inline std::string timeline_svg(const Timeline& timeline, const std::string& title,
                                const std::string& row_label = "stage",
                                const std::string& numbered = "microbatch") {
  SvgOptions o;
  o.row_label = row_label;
  o.numbered = numbered;
  return timeline_svg(timeline, title, o);
}

// Writes timeline_svg(timeline, title, options) to `path`; trident::Error naming the file if it
// cannot.
inline void write_timeline_svg(const std::string& path, const Timeline& timeline,
                               const std::string& title, const SvgOptions& options) {
  std::ofstream out(path);
  if (out) out << timeline_svg(timeline, title, options);
  require(static_cast<bool>(out), "cannot write the timeline SVG '" + path + "'");
}
inline void write_timeline_svg(const std::string& path, const Timeline& timeline,
                               const std::string& title, const std::string& row_label = "stage",
                               const std::string& numbered = "microbatch") {
  SvgOptions o;
  o.row_label = row_label;
  o.numbered = numbered;
  write_timeline_svg(path, timeline, title, o);
}

}  // namespace trident::pp
