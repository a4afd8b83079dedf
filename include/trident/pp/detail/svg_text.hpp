// trident/pp/detail/svg_text.hpp: what the SVG figures (pp/svg.hpp, io/bar_chart_svg.hpp) write
// with: escaped text, short numbers, HSL colours, axis ticks.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace trident::pp::detail {

inline std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

inline std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", x);
  return text;
}

// HSL (hue in degrees, saturation and lightness in [0, 1]) as "#rrggbb", by CSS Color 4's hslToRgb.
inline std::string hsl(double hue, double saturation, double lightness) {
  const double a = saturation * std::min(lightness, 1 - lightness);
  auto channel = [&](int n) {
    const double k = std::fmod(n + hue / 30, 12.0);
    const double value = lightness - a * std::max(-1.0, std::min({k - 3, 9 - k, 1.0}));
    return static_cast<int>(std::lround(value * 255));
  };
  char text[16];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", channel(0), channel(8), channel(4));
  return text;
}

// A tick step of 1, 2 or 5 times a power of ten, giving about 10 ticks.
inline double tick_step(double span) {
  const double raw = span / 10, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  return (norm < 1.5 ? 1 : norm < 3.5 ? 2 : norm < 7.5 ? 5 : 10) * magnitude;
}

}  // namespace trident::pp::detail
