// pp/ timelines: makespan and bubble of a measured timeline, and their SVG and Chrome trace
// exports. No MPI communication: runs on one rank.
#include <doctest/doctest.h>

#include <cstdio>
#include <set>
#include <string>
#include <trident/io/bar_chart_svg.hpp>
#include <trident/io/chrome_trace.hpp>
#include <trident/pp/in_flight.hpp>
#include <trident/pp/schedule.hpp>
#include <trident/pp/simulate.hpp>
#include <trident/pp/svg.hpp>

using namespace trident;
using namespace trident::pp;
using trident::io::chrome_trace;
using trident::io::write_chrome_trace;

namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("Timeline: makespan and bubble fraction of a measured timeline") {
  Timeline t;
  t.ranks = 2;
  t.intervals = {{0, IntervalKind::forward, 0, 0, 10.0, 11.0},
                 {0, IntervalKind::recv, 0, 0, 11.0, 12.0},
                 {1, IntervalKind::backward, 0, 0, 12.0, 14.0}};
  CHECK(t.makespan() == doctest::Approx(4.0));
  // idle: rank 0 4 - 1 = 3, rank 1 4 - 2 = 2; (3 + 2) / (2 * 4)
  CHECK(t.bubble_share() == doctest::Approx(5.0 / 8));
  CHECK(Timeline{}.bubble_share() == 0);
}

TEST_CASE("timeline_svg: one numbered box per compute, chunk hatching, escaped title, an axis") {
  const Simulation sim = simulate(make_schedule({ScheduleKind::interleaved, 2, 4, 2}));
  const std::string svg = timeline_svg(sim.timeline, "p=2 & m=4 <interleaved>");
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(count(svg, "<g class=\"forward\">") == 2 * 4 * 2);
  CHECK(count(svg, "<g class=\"backward\">") == 2 * 4 * 2);
  CHECK(count(svg, "fill=\"url(#chunk1)\"") == 2 * 4 * 2 + 1);  // chunk-1 boxes + legend
  CHECK(svg.find("p=2 &amp; m=4 &lt;interleaved&gt;") != std::string::npos);
  CHECK(svg.find("<title>stage 1 backward microbatch 3 chunk 0") != std::string::npos);
  CHECK(svg.find(">stage 1</text>") != std::string::npos);
  const std::string ranks = timeline_svg(sim.timeline, "t", "rank");  // a run's rows are ranks
  CHECK(ranks.find(">rank 1</text>") != std::string::npos);
  CHECK(ranks.find(">stage 1</text>") == std::string::npos);
  CHECK(svg.find(">time</text>") != std::string::npos);
  CHECK(svg.find(">F3</text>") != std::string::npos);  // each box says its pass and microbatch
  CHECK(svg.find(">B3</text>") != std::string::npos);
  CHECK(svg.find(">idle: the bubble</text>") != std::string::npos);
  SvgOptions named;  // a run's rows, its clock in seconds drawn in ms, a caption
  named.row_names = {"rank 0: stage 0 (tp 0, dp 0)", "rank 1: stage 1 (tp 0, dp 0)"};
  named.time_unit = "ms";
  named.time_scale = 1e3;
  named.caption = "measured <here>";
  const std::string run = timeline_svg(sim.timeline, "t", named);
  CHECK(run.find(">rank 1: stage 1 (tp 0, dp 0)</text>") != std::string::npos);
  CHECK(run.find(">time, ms</text>") != std::string::npos);
  CHECK(run.find(">measured &lt;here&gt;</text>") != std::string::npos);
  CHECK(count(svg, "<g") == count(svg, "</g>"));
  CHECK_THROWS_WITH_AS(write_timeline_svg("/nonexistent-dir/t.svg", sim.timeline, "t"),
                       "cannot write the timeline SVG '/nonexistent-dir/t.svg'", Error);
}

TEST_CASE("chrome_trace: complete events in microseconds, one named track per rank") {
  Timeline t;
  t.ranks = 2;
  t.intervals = {{0, IntervalKind::forward, 3, 0, 1.0, 2.5},
                 {1, IntervalKind::backward, 3, 1, 2.5, 3.0}};
  const nlohmann::json trace = chrome_trace(t, {"pp0", "pp1"});
  const auto& events = trace.at("traceEvents");
  std::vector<nlohmann::json> complete, names;
  for (const auto& e : events) {
    if (e.at("ph") == "X") complete.push_back(e);
    if (e.at("ph") == "M" && e.at("name") == "thread_name") names.push_back(e);
  }
  REQUIRE(complete.size() == 2);
  CHECK(complete[0].at("name") == "F3");
  CHECK(complete[0].at("ts").get<double>() == doctest::Approx(1e6));
  CHECK(complete[0].at("dur").get<double>() == doctest::Approx(1.5e6));
  CHECK(complete[0].at("tid") == 0);
  CHECK(complete[1].at("name") == "B3c1");
  CHECK(complete[1].at("tid") == 1);
  CHECK(complete[1].at("cat") == "backward");
  REQUIRE(names.size() == 2);
  CHECK(names[1].at("tid") == 1);
  CHECK(names[1].at("args").at("name") == "pp1");
  CHECK(chrome_trace(t, {}).at("traceEvents")[1].at("args").at("name") == "stage 0");
  CHECK_THROWS_WITH_AS(chrome_trace(t, {"only one"}), "chrome_trace: 1 rank names for 2 ranks",
                       Error);
  CHECK_THROWS_WITH_AS(write_chrome_trace("/nonexistent-dir/trace.json", t, {}),
                       "cannot write the Chrome trace '/nonexistent-dir/trace.json'", Error);
}

TEST_CASE("ZB-H1's W passes: their own boxes and shade in the SVG, W<n> in the Chrome trace") {
  const Simulation sim = simulate(make_schedule({ScheduleKind::zb_h1, 4, 8}), {1, 2, 0, 0.5});
  const std::string svg = timeline_svg(sim.timeline, "zb-h1");
  CHECK(count(svg, "<g class=\"forward\">") == 4 * 8);
  CHECK(count(svg, "<g class=\"backward\">") == 4 * 8);
  CHECK(count(svg, "<g class=\"weight\">") == 4 * 8);
  CHECK(count(svg, "W: weight gradient") == 1);
  CHECK(svg.find(">W3</text>") != std::string::npos);
  // microbatch 3's three boxes in three different colours
  const std::string f = detail::box_colour(3, IntervalKind::forward, 8),
                    b = detail::box_colour(3, IntervalKind::backward, 8),
                    w = detail::box_colour(3, IntervalKind::weight, 8);
  CHECK(f != w);
  CHECK(b != w);
  CHECK(svg.find("fill=\"" + w + "\"") != std::string::npos);
  int weights = 0;
  const nlohmann::json trace = chrome_trace(sim.timeline, {});
  for (const auto& e : trace.at("traceEvents"))
    if (e.value("cat", "") == "weight") weights += e.at("name").get<std::string>()[0] == 'W';
  CHECK(weights == 4 * 8);
}

TEST_CASE("box_colour: m microbatches, m different colours, neighbours far apart in hue") {
  for (int m : {2, 3, 5, 8, 12, 16, 40, 64}) {
    std::set<std::string> seen;
    for (int mb = 0; mb < m; ++mb) seen.insert(detail::box_colour(mb, IntervalKind::backward, m));
    CHECK_MESSAGE(int(seen.size()) == m, "m = " << m);
  }
  // m = 8: hues 0, 135, 270, 45, ... (stride 3 of 8 steps of 45 degrees)
  CHECK(detail::box_colour(1, IntervalKind::backward, 8) == detail::hsl(135, 0.60, 0.40));
  CHECK(detail::box_colour(3, IntervalKind::backward, 8) == detail::hsl(45, 0.60, 0.40));
}

TEST_CASE("activations_in_flight: the held staircase peaks where the simulator counts its peak") {
  struct Case {
    ScheduleKind kind;
    int chunks;
  };
  for (const Case c : {Case{ScheduleKind::gpipe, 1}, Case{ScheduleKind::one_f_one_b, 1},
                       Case{ScheduleKind::interleaved, 2}, Case{ScheduleKind::zb_h1, 1},
                       Case{ScheduleKind::zbv, 2}}) {
    const Simulation sim =
        simulate(make_schedule({c.kind, 4, 8, c.chunks}), {1, 2, 0, 0.5}, traits(c.kind).placement);
    const auto rows = activations_in_flight(sim.timeline);
    REQUIRE(rows.size() == 4);
    for (int s = 0; s < 4; ++s) {
      CHECK_MESSAGE(peak_held(rows[std::size_t(s)]) == sim.peak_in_flight[std::size_t(s)],
                    to_string(c.kind) << " stage " << s);
      CHECK(rows[std::size_t(s)].back().held == 0);  // everything released by the end
    }
  }
  // GPipe holds all 8 on every stage; 1F1B p - s (Narayanan et al. 2021 §2.2)
  const auto gpipe =
      activations_in_flight(simulate(make_schedule({ScheduleKind::gpipe, 4, 8}), {}).timeline);
  const auto one_f_one_b = activations_in_flight(
      simulate(make_schedule({ScheduleKind::one_f_one_b, 4, 8}), {}).timeline);
  for (int s = 0; s < 4; ++s) {
    CHECK(peak_held(gpipe[std::size_t(s)]) == 8);
    CHECK(peak_held(one_f_one_b[std::size_t(s)]) == 4 - s);
  }
  // a release and a start at the same instant: the release first
  Timeline t;
  t.ranks = 1;
  t.intervals = {{0, IntervalKind::forward, 0, 0, 0, 1},
                 {0, IntervalKind::backward, 0, 0, 1, 2},
                 {0, IntervalKind::forward, 1, 0, 2, 3},
                 {0, IntervalKind::backward, 1, 0, 3, 4}};
  CHECK(peak_held(activations_in_flight(t)[0]) == 1);
}

TEST_CASE("timeline_svg with in_flight: a panel of the activations held, each stage's peak") {
  const Simulation sim = simulate(make_schedule({ScheduleKind::one_f_one_b, 4, 8}), {});
  SvgOptions o;
  o.in_flight = true;
  const std::string svg = timeline_svg(sim.timeline, "1f1b", o);
  CHECK(svg.find("activations held, in microbatches (each strip 0 to 8, all of them)") !=
        std::string::npos);
  std::size_t at = 0;  // a strip per stage, in order, each with its peak: 4 3 2 1
  for (int s = 0; s < 4; ++s) {
    at = svg.find(">stage " + std::to_string(s) + "</text><line", at);
    REQUIRE(at != std::string::npos);
    at = svg.find(">peak " + std::to_string(4 - s) + "<", at);
    CHECK_MESSAGE(at != std::string::npos, "stage " << s);
  }
  CHECK(count(svg, "<path d=\"M ") == 4);
  CHECK(timeline_svg(sim.timeline, "1f1b").find("activations held") == std::string::npos);
}

TEST_CASE("bar_chart_svg: stacked segments, markers, labels and the notes under the legend") {
  io::BarChart c;
  c.title = "memory & more";
  c.unit = "MiB";
  c.labels = {"a", "b"};
  c.series = {{"parameters", "#111111", {1, 2}}, {"activations", "#222222", {3, 0}}};
  c.markers = {4.5, std::nan("")};
  c.marker_name = "predicted";
  c.notes = {"tallest: a, 4.0 MiB", "  activations 3.0 MiB (75%): <why>"};
  const std::string svg = io::bar_chart_svg(c);
  CHECK(svg.find("memory &amp; more") != std::string::npos);
  CHECK(count(svg, "<rect x=") == 3 + 2);          // three non-zero segments, two legend swatches
  CHECK(count(svg, "stroke-dasharray") == 1 + 1);  // one marker, its legend line
  CHECK(svg.find(">tallest: a, 4.0 MiB</text>") != std::string::npos);
  CHECK(svg.find(">  activations 3.0 MiB (75%): &lt;why&gt;</text>") != std::string::npos);
  c.series[1].values.pop_back();
  CHECK_THROWS_WITH_AS(io::bar_chart_svg(c),
                       "bar chart 'memory & more': series 'activations' has 1 values for 2 bars",
                       Error);
}
