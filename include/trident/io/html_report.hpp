// trident/io/html_report.hpp: --html FILE, a training run's report as one self-contained web
// page: no network, no external script or font; the figures are SVG drawn here (line charts,
// io/line_chart_svg.hpp; bars, io/bar_chart_svg.hpp; the pipeline, pp/svg.hpp) from the run's
// JSON (io/run_json.hpp), which the page also carries whole. The page shows: the loss and the
// held-out loss over the steps, tokens/s and MFU per step, memory per rank by kind next to the
// ZeRO formula, bytes per axis next to their formulas, the last step's pipeline timeline (zoom
// with the buttons or Ctrl + wheel) and who made whom wait. Every drawn point and bar carries
// its number in data attributes, so a browser test reads back what was plotted.
#pragma once

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../core/comm.hpp"
#include "../core/error.hpp"
#include "bar_chart_svg.hpp"
#include "line_chart_svg.hpp"

namespace trident::io {

namespace html_detail {

// The page's style and its one script: the zoom of the timeline; body[data-ready] marks that the
// script ran to its end.
inline const char* kHead = R"HTML(<style>
body { font-family: Helvetica, Arial, sans-serif; margin: 24px; color: #222; max-width: 1100px; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
p.note { color: #555; font-size: 13px; } table { border-collapse: collapse; font-size: 13px; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
td:last-child { text-align: left; }
.zoom { overflow: auto; border: 1px solid #ddd; max-height: 520px; }
button { margin-right: 6px; }
</style>
)HTML";
inline const char* kScript = R"HTML(<script>
(function () {
  var box = document.getElementById("timeline");
  var svg = box ? box.querySelector("svg") : null;
  var scale = 1, w0 = svg ? svg.width.baseVal.value : 0, h0 = svg ? svg.height.baseVal.value : 0;
  function zoom(by) {
    if (!svg) return;
    scale = by === 0 ? 1 : Math.min(32, Math.max(1, scale * by));
    svg.setAttribute("width", w0 * scale);
    svg.setAttribute("height", h0 * scale);
  }
  document.querySelectorAll("button[data-zoom]").forEach(function (b) {
    b.addEventListener("click", function () { zoom(parseFloat(b.dataset.zoom)); });
  });
  if (box) box.addEventListener("wheel", function (e) {
    if (!e.ctrlKey) return;
    e.preventDefault();
    zoom(e.deltaY < 0 ? 1.25 : 0.8);
  }, { passive: false });
  var data = JSON.parse(document.getElementById("page-json").textContent);
  if (data.losses) document.body.dataset.steps = String(data.losses.length);
  document.body.dataset.ready = "yes";
})();
</script>
)HTML";

inline std::string escape(const std::string& s) {
  return pp::detail::xml_escape(s);
}

// x = the steps done before the value (a step's loss is before its update)
inline std::vector<double> steps_from(int first, std::size_t n) {
  std::vector<double> xs;
  for (std::size_t k = 0; k < n; ++k) xs.push_back(first + double(k));
  return xs;
}
inline double number_or_nan(const nlohmann::json& v) {
  return v.is_number() ? v.get<double>() : std::nan("");
}

inline std::string loss_chart(const nlohmann::json& j) {
  LineChart c{"loss", "steps done", "loss (nats per token)", {}};
  std::vector<double> losses;
  for (const auto& l : j.at("losses")) losses.push_back(number_or_nan(l));
  c.series.push_back({"loss", "#1f77b4", steps_from(j.at("first_step"), losses.size()), losses});
  std::vector<double> vx, vy;
  for (std::size_t k = 0; k < j.at("val_losses").size(); ++k) {
    vx.push_back(j.at("val_steps")[k]);
    vy.push_back(number_or_nan(j.at("val_losses")[k]));
  }
  if (!vx.empty()) c.series.push_back({"held-out loss", "#d62728", vx, vy});
  return line_chart_svg(c);
}

// tokens/s and MFU of each step: batch x seq / its seconds, and that x FLOPs per token / peak
inline std::string throughput_charts(const nlohmann::json& j) {
  const double tokens =
      j.at("config").at("batch").get<double>() * j.at("config").at("seq").get<double>();
  const nlohmann::json& m = j.at("mfu");
  std::vector<double> rate, mfu;
  for (const auto& s : j.at("step_seconds")) {
    rate.push_back(tokens / s.get<double>());
    mfu.push_back(number_or_nan(m.at("peak_flops")) > 0
                      ? rate.back() * m.at("model_flops_per_token").get<double>() /
                            m.at("peak_flops").get<double>()
                      : std::nan(""));
  }
  const std::vector<double> xs = steps_from(j.at("first_step"), rate.size());
  return line_chart_svg({"tokens/s (the first step warms up)",
                         "step",
                         "tokens/s",
                         {{"tokens/s", "#2ca02c", xs, rate}}}) +
         line_chart_svg({"MFU", "step", "MFU", {{"MFU", "#9467bd", xs, mfu}}}) +
         "<p class=\"note\">MFU's peak: " + escape(m.at("peak_source")) + "</p>";
}

// One bar per rank, stacked by `keys` of ranks[k][group] (bytes, or seconds), scaled by `scale`;
// the marker: the sum of ranks[k][marker_group]'s values (or its number), scaled alike.
inline std::string rank_bars(const nlohmann::json& ranks, const std::string& title,
                             const std::string& unit, const std::string& group,
                             const std::vector<std::string>& keys, double scale,
                             const std::string& marker_group, const std::string& marker_name) {
  BarChart c;
  c.title = title;
  c.unit = unit;
  c.marker_name = marker_name;
  for (std::size_t k = 0; k < keys.size(); ++k)
    c.series.push_back({keys[k], kind_colour(int(k)), {}});
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    c.labels.push_back("rank " + std::to_string(r));
    for (std::size_t k = 0; k < keys.size(); ++k)
      c.series[k].values.push_back(
          (group.empty() ? ranks[r] : ranks[r].at(group)).at(keys[k]).get<double>() * scale);
    if (marker_group.empty()) continue;
    const nlohmann::json& m = ranks[r].at(marker_group);
    double sum = m.is_number() ? m.get<double>() : 0.0;
    if (m.is_object())
      for (const nlohmann::json& v : m) sum += v.get<double>();
    c.markers.push_back(sum * scale);
  }
  return bar_chart_svg(c);
}

// Who made whom wait: per rank the step's split, and in each group the rank waited for most.
inline std::string waits_section(const nlohmann::json& waits) {
  if (waits.is_null()) return "<p class=\"note\">not attributed (--no-waits, or one step)</p>";
  const nlohmann::json& ranks = waits.at("ranks");
  std::string html = rank_bars(ranks, "each rank's step", "ms per step", "",
                               {"compute", "exposed", "waiting"}, 1e3, "", "");
  html +=
      "<table><tr><th>rank</th><th>step ms</th><th>waiting ms</th><th>waited for most</th></tr>";
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    std::string most;
    for (const auto& [group, culprits] : ranks[r].at("waited_for").items()) {
      std::size_t c = 0;
      for (std::size_t k = 1; k < culprits.size(); ++k)
        if (culprits[k].get<double>() > culprits[c].get<double>()) c = k;
      if (culprits[c].get<double>() * 1e3 >= 0.005)
        most += (most.empty() ? "" : ", ") + group + ": rank " + std::to_string(c) + " (" +
                pp::detail::number(culprits[c].get<double>() * 1e3) + " ms)";
    }
    html += "<tr><td>" + std::to_string(r) + "</td><td>" +
            pp::detail::number(ranks[r].at("step").get<double>() * 1e3) + "</td><td>" +
            pp::detail::number(ranks[r].at("waiting").get<double>() * 1e3) + "</td><td>" +
            escape(most.empty() ? "-" : most) + "</td></tr>";
  }
  return html + "</table>";
}

}  // namespace html_detail

// A page: its title, its body (HTML) and `data`, carried whole as the page's JSON (a script
// element of type application/json, id page-json), which its script reads.
inline std::string html_page(const std::string& title, const std::string& body,
                             const nlohmann::json& data) {
  std::string text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  for (std::size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 2))
    text.replace(at, 2, "<\\/");  // the data cannot end its script element
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
         html_detail::escape(title) + "</title>\n" + html_detail::kHead + "</head><body>\n" + body +
         "\n<script type=\"application/json\" id=\"page-json\">" + text + "</script>\n" +
         html_detail::kScript + "</body></html>\n";
}

// The page of a training run: `run` is its --json report (with step_seconds), `timeline_svg` the
// last step's pipeline (pp/svg.hpp), `heading` its first line.
inline std::string training_report_html(const nlohmann::json& run, const std::string& heading,
                                        const std::string& timeline_svg) {
  using namespace html_detail;
  const nlohmann::json& ranks = run.at("ranks");
  const nlohmann::json& mfu = run.at("mfu");
  std::string body = "<h1>" + escape(heading) + "</h1>\n<p>final loss " +
                     pp::detail::number(number_or_nan(run.at("final_loss"))) + ", " +
                     pp::detail::number(number_or_nan(run.at("tokens_per_s"))) + " tokens/s, MFU " +
                     pp::detail::number(number_or_nan(mfu.at("value"))) +
                     "</p><p class=\"note\">MFU = " + escape(mfu.at("form")) + " (" +
                     escape(mfu.at("source")) + "); peak: " + escape(mfu.at("peak_source")) +
                     "</p>\n";
  body += "<h2>Loss</h2>" + loss_chart(run) + "<h2>Throughput</h2>" + throughput_charts(run);
  body += "<h2>Memory per rank</h2>" +
          rank_bars(ranks, "measured memory by kind", "MiB", "memory_bytes",
                    {"parameters", "gradients", "optimizer", "activations_peak", "buffers_peak"},
                    1.0 / (1 << 20), "model_states_formula_bytes",
                    "model states, ZeRO formula (Rajbhandari et al. 2020 §5.1)");
  body += "<h2>Traffic per axis</h2>" +
          rank_bars(ranks, "bytes per step by axis (each call's whole buffer)", "MiB",
                    "traffic_bytes_per_step", {"tp", "pp", "dp", "emb", "cp"}, 1.0 / (1 << 20),
                    "traffic_formula_bytes_per_step", "the formulas (train/formulas.hpp)");
  body +=
      "<h2>Pipeline, the last step</h2><p><button data-zoom=\"1.5\">zoom in</button>"
      "<button data-zoom=\"0.667\">zoom out</button><button data-zoom=\"0\">reset</button>"
      " (or Ctrl + wheel)</p><div class=\"zoom\" id=\"timeline\">" +
      timeline_svg + "</div>";
  body += "<h2>Who made whom wait</h2>" + waits_section(run.at("waits"));
  return html_page(heading, body, run);
}

// Rank 0 opens `path` at the start of a run, so that an unwritable one fails before training;
// every rank fails alike. Collective.
inline void check_writable(const Comm& world, const std::string& path, const std::string& flag) {
  int ok = 1;
  if (world.rank() == 0) ok = std::ofstream(path) ? 1 : 0;
  world.broadcast(Span<int>(&ok, 1), 0);
  require(ok == 1, flag + ": cannot write " + path);
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  require(static_cast<bool>(out << text), "cannot write '" + path + "'");
}

}  // namespace trident::io
