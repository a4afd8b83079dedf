// bench/waits: what finding out who made whom wait costs (train/waits.hpp), on the bench model at
// TP2, PP2 (8 microbatches) and DP2 ZeRO-3.
//
//   mpiexec -n 2 ./bench_waits [--seconds 20]                         (one thread per rank)
//
// Two costs. Inside the step: the flight recorder's step log (core/flight_recorder.hpp), a copy
// of each call's record and the stamp of when its wait began; the same trainer steps with the
// log kept and without, interleaved, and the median of the per-repetition ratios says what it
// costs (1.00: nothing measurable). After the step: gathering every rank's stamps on rank 0 and
// matching them (WaitAttribution::add), timed on its own, next to the step.
#include <trident/io/cli.hpp>
#include <trident/train/wait_attribution.hpp>
#include <trident/trident.hpp>

#include "bench_util.hpp"

using namespace trident;
using namespace bench;

namespace {

void row(const Comm& world, const std::string& name, const gpt2::Options& o, double seconds) {
  BenchTrainer t(world, o, TokenSource::synthetic(o.model.vocab));
  WaitAttribution waits(world);  // keeps the step log from here on
  std::size_t calls = 0;
  double attribution = 0;
  int attributed = 0;
  auto step = [&](bool log) {
    flight_recorder().keep_step_log(log);
    const StepResult r = t.step();
    if (log) {
      calls = flight_recorder().step_log().size();
      const double t0 = detail::now_seconds();
      waits.add(world, flight_recorder().step_log(), r, 0);
      attribution += slowest(world, detail::now_seconds() - t0);
      ++attributed;
    }
    return slowest(world, r.seconds);
  };
  const Timings times =
      interleaved(world, seconds, {[&] { return step(true); }, [&] { return step(false); }});
  if (world.rank() == 0)
    std::printf("%-24s %8zu %10.2f %10.2f %12.3f %12.2f %9.3f%%\n", name.c_str(), calls,
                times.median(1) * 1e3, times.median(0) * 1e3, times.ratio(0, 1),
                attribution / attributed * 1e3, 100 * attribution / attributed / times.median(1));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    double seconds = 20;
    cli::App app{"What attributing waits costs: the step log inside the step, the matching after."};
    app.add_option("--seconds", seconds, "time for each row")->capture_default_str();
    parse_command_line(app, argc, argv, world);
    require(world.size() == 2, "bench_waits runs on 2 ranks: mpiexec -n 2 ./bench_waits");
    configure_threads(world, 1);
    const gpt2::Config c = bench_model();
    if (world.rank() == 0)
      std::printf(
          "# bench_waits: 2 ranks, 1 thread each; bench model V=%d T=%d L=%d C=%d H=%d, global "
          "batch %d, float; %s\n# with/without: median of the per-repetition ratios of the step "
          "with the step log kept to the step without it\n%-24s %8s %10s %10s %12s %12s %10s\n",
          c.vocab, c.seq, c.layers, c.hidden, c.heads, kBatch, load_average().c_str(), "layout",
          "calls", "step_ms", "logged_ms", "with/without", "after_ms", "of_step");
    gpt2::Options pp = bench_options({1, 2, 1}, 8), zero3 = bench_options({1, 1, 2});
    zero3.zero.stage = 3;
    row(world, "TP2", bench_options({2, 1, 1}), seconds);
    row(world, "PP2, 8 microbatches", pp, seconds);
    row(world, "DP2 ZeRO-3", zero3, seconds);
    return 0;
  });
}
