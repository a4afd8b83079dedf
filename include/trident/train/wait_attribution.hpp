// trident/train/wait_attribution.hpp: who made whom wait, step by step (train/waits.hpp says
// how a wait is split and attributed): each step's flight-recorder stamps of every rank, on world
// rank 0's clock, gathered and attributed, summed over the steps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "trainer.hpp"
#include "waits.hpp"

namespace trident {

// The waits of the steps added, on world rank 0: each step's stamps gathered from every rank
// and attributed (attribute_waits), summed over the steps.
class WaitAttribution {
 public:
  WaitAttribution() = default;  // off: add() does nothing
  explicit WaitAttribution(const Comm& world)
      : ranks_(world.size()), rank_(world.rank()), offset_(clock_offset(world)) {
    flight_recorder().keep_step_log(true);
    total_ = empty();
  }
  bool enabled() const { return ranks_ > 0; }

  // One step of this rank: the recorder's log of its calls (begun at the step's origin), its
  // timeline and optimizer seconds, the slow fault's sleeps in it. Collective.
  void add(const Comm& world, const std::vector<CallRecord>& log, const StepResult& r,
           double injected) {
    if (!enabled()) return;
    const double t0 = detail::now_seconds();
    std::vector<double> mine{0, r.seconds, compute_seconds(log, r), injected};
    std::vector<std::uint64_t> matches;
    pack(log, mine, matches);
    const int count = static_cast<int>(matches.size());
    std::vector<int> counts(std::size_t(world.size()));
    world.all_gather(Span<const int>(&count, 1), Span<int>(counts));
    const std::size_t most = std::size_t(*std::max_element(counts.begin(), counts.end()));
    mine[0] = count;
    mine.resize(kHeader + kPerCall * most, 0.0);
    matches.resize(most, 0);
    std::vector<double> all(mine.size() * std::size_t(world.size()));
    std::vector<std::uint64_t> all_matches(most * std::size_t(world.size()));
    world.all_gather(Span<const double>(mine), Span<double>(all));
    world.all_gather(Span<const std::uint64_t>(matches), Span<std::uint64_t>(all_matches));
    if (world.rank() == 0) attribute(all, all_matches, most);
    seconds_ += detail::now_seconds() - t0;
  }

  const std::vector<RankWaits>& total() const { return total_; }  // world rank 0's
  const std::vector<RankWaits>& last() const { return last_; }    // the last step added
  int steps() const { return steps_; }
  double seconds() const { return seconds_; }  // this rank's time in add(), after the steps

 private:
  static constexpr std::size_t kHeader = 4, kPerCall = 5;  // (count, step, compute, injected)

  std::vector<RankWaits> empty() const {
    std::vector<RankWaits> w(static_cast<std::size_t>(ranks_));
    for (RankWaits& x : w) x.waited_for.assign(std::size_t(kWaitGroups * ranks_), 0.0);
    return w;
  }

  // Forward, backward and weight passes plus the optimizer, less the calls blocked inside them.
  static double compute_seconds(const std::vector<CallRecord>& log, const StepResult& r) {
    std::vector<std::pair<double, double>> spans{{r.seconds - r.optimizer_seconds, r.seconds}};
    for (const pp::Interval& i : r.intervals)
      if (pp::is_compute(i.kind)) spans.push_back({i.begin, i.end});
    double compute = 0;
    for (const auto& [begin, end] : spans) {
      compute += end - begin;
      for (const CallRecord& c : log)
        if (c.end > 0)
          compute -= std::max(
              0.0, std::min(end, c.end - r.origin) - std::max(begin, c.blocked_from - r.origin));
    }
    return compute;
  }

  // Each complete call as (group, peer, posted, blocked_from, end) on rank 0's clock, and
  // its match: a collective's group and sequence number; a message's group, ends, tag and count.
  void pack(const std::vector<CallRecord>& log, std::vector<double>& out,
            std::vector<std::uint64_t>& matches) const {
    std::map<std::vector<std::uint64_t>, std::uint64_t> sent;  // messages so far per route
    for (const CallRecord& c : log) {
      if (c.skipped || c.end <= 0 || !c.group) continue;
      const bool message = c.op == CommOp::send || c.op == CommOp::recv;
      const int me = rank_;
      const int peer = message ? c.group->world_ranks[std::size_t(c.peer)] : -1;
      std::vector<std::uint64_t> key{c.group->key, c.sequence};
      if (message) {
        const bool send = c.op == CommOp::send;
        key = {c.group->key, std::uint64_t(send ? me : peer), std::uint64_t(send ? peer : me),
               std::uint64_t(c.tag)};
        key.push_back(sent[key]++);
      }
      std::uint64_t h = 1469598103934665603ull;  // FNV-1a
      for (std::uint64_t k : key) h = (h ^ k) * 1099511628211ull;
      matches.push_back(h);
      out.insert(out.end(), {double(wait_group(c.group->name)), double(peer), c.start - offset_,
                             c.blocked_from - offset_, c.end - offset_});
    }
  }

  void attribute(const std::vector<double>& all, const std::vector<std::uint64_t>& matches,
                 std::size_t most) {
    std::vector<CallStamp> stamps;
    last_ = empty();
    const std::size_t per_rank = kHeader + kPerCall * most;
    for (int r = 0; r < ranks_; ++r) {
      const double* h = all.data() + per_rank * std::size_t(r);
      RankWaits& w = last_[std::size_t(r)];
      w.step = h[1];
      w.compute = h[2];
      w.injected = h[3];
      for (std::size_t k = 0; k < std::size_t(h[0]); ++k) {
        const double* c = h + kHeader + kPerCall * k;
        stamps.push_back(
            {r, int(c[0]), int(c[1]), matches[most * std::size_t(r) + k], c[2], c[3], c[4]});
      }
    }
    attribute_waits(stamps, last_);
    for (int r = 0; r < ranks_; ++r) {
      RankWaits &t = total_[std::size_t(r)], &l = last_[std::size_t(r)];
      t.step += l.step;
      t.compute += l.compute;
      t.exposed += l.exposed;
      t.waiting += l.waiting;
      t.injected += l.injected;
      for (std::size_t k = 0; k < t.waited_for.size(); ++k) t.waited_for[k] += l.waited_for[k];
    }
    ++steps_;
  }

  int ranks_ = 0, rank_ = 0, steps_ = 0;
  double offset_ = 0, seconds_ = 0;
  std::vector<RankWaits> total_, last_;
};

}  // namespace trident
