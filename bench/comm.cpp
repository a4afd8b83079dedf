// bench/comm: trident's collectives (Comm), by both of its paths, next to raw blocking MPI, in
// the same run.
//
//   mpiexec -n 8 ./bench_comm [--min-bytes 4K] [--max-bytes 64M] [--seconds-per-size 1]
//                             [--ops all_reduce,all_gather,reduce_scatter,broadcast,all_to_all]
//
// For each operation and message size (powers of 4 from --min-bytes up to --max-bytes), three
// implementations run interleaved, call by call, the order rotating each repetition, so machine
// noise hits all three:
//   mpi      the blocking call (MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Bcast);
//   trident  Comm with the shared-memory path off: a nonblocking MPI collective completed by
//            trident's wait policy (MPI_Test + sched_yield, core/request.hpp);
//   shm      Comm's shared-memory path (core/shm_collectives.hpp), at every size (Comm itself
//            takes it from shm_tuning().min_bytes up, printed in the header); all_gather and
//            broadcast only where the group has more ranks than cores or spans nodes, else
//            MPI's, as Comm;
//   window   all_reduce, reduce_scatter and all_gather in place over a shared window
//            (Comm::reduce_in_window, gather_in_window): the buffer already lies in shared
//            memory, as ZeRO-0/1's DP gradients and ZeRO-1/2's parameters do when the group
//            shares a node (zero/detail/unit_window.hpp), so nothing is copied in; only when
//            every rank is on one node ("-" otherwise).
// float32, sum; broadcast from rank 0.
//
// A repetition is a barrier, then one call; its time is the slowest rank's. Reported: the median
// over repetitions, and the bus bandwidth in the nccl-tests convention, bytes = the full buffer
// (all_reduce: the buffer; all_gather: the output; reduce_scatter: the input):
//   all_reduce:                  bytes / time * 2(n-1)/n
//   all_gather, reduce_scatter:  bytes / time * (n-1)/n
// The repetitions of a size fill about --seconds-per-size (at least 5, at most 1000).
// all_to_all has its own table, after the others (comm_all_to_all.hpp): Comm::all_to_all_v next
// to MPI_Alltoallv at 1, 4 and 16 MiB per rank, whatever --min-bytes and --max-bytes say.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <trident/io/cli.hpp>
#include <trident/models/gpt2/cli.hpp>
#include <trident/plan/formulas.hpp>
#include <trident/trident.hpp>
#include <vector>

#include "bench_util.hpp"
#include "comm_all_to_all.hpp"

using namespace trident;
using bench::median;

namespace {

constexpr int kMinReps = 5;
constexpr int kMaxReps = 1000;

// The buffers of one message size: `full` holds size * shard elements, `shard` one rank's part;
// `window` (when the window path runs) one array of `full`'s size per rank.
struct Buffers {
  std::vector<float> full;
  std::vector<float> shard;
  std::unique_ptr<SharedWindow> window;
};

enum Impl { kMpi, kTrident, kShm, kWindow };
constexpr int kImpls = 4;
const char* const kImplNames[kImpls] = {"MPI", "trident", "trident's shared memory",
                                        "trident's shared window"};

// Whether `impl` runs `op` in this run (the window: not broadcast; every rank on one node).
bool runs(Impl impl, const std::string& op, bool one_node) {
  return impl != kWindow || (one_node && op != "broadcast");
}

// One call of `op` by `impl`.
// all_reduce, broadcast: full in place; all_gather: shard -> full; reduce_scatter: full -> shard.
// The window: this rank's array in place: all of it (all_reduce), shard `rank` of it
// (reduce_scatter), or shard `rank` into every array (all_gather).
void call(const std::string& op, Impl impl, Buffers& b, const Comm& world) {
  const int n = static_cast<int>(b.shard.size());
  const bool ours = impl != kMpi;
  ShmTuning& shm = shm_tuning();
  const ShmTuning saved = shm;
  shm.enabled = impl == kShm || impl == kWindow;
  shm.min_bytes = 0;
  struct Restore {
    ShmTuning& t;
    ShmTuning saved;
    ~Restore() { t = saved; }
  } restore{shm, saved};
  if (impl == kWindow && op == "all_gather")
    return world.gather_in_window<float>(*b.window, {{0, b.full.size()}});
  if (impl == kWindow)
    return world.reduce_in_window<float>(*b.window, {{0, b.full.size()}}, op == "all_reduce");
  if (op == "all_reduce") {
    if (ours) return world.all_reduce<float>(b.full);
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, b.full.data(), static_cast<int>(b.full.size()), MPI_FLOAT,
                            MPI_SUM, world.get()),
              "MPI_Allreduce");
  } else if (op == "all_gather") {
    if (ours) return world.all_gather<float>(b.shard, b.full);
    check_mpi(MPI_Allgather(b.shard.data(), n, MPI_FLOAT, b.full.data(), n, MPI_FLOAT, world.get()),
              "MPI_Allgather");
  } else if (op == "broadcast") {
    if (ours) return world.broadcast<float>(b.full, 0);
    check_mpi(MPI_Bcast(b.full.data(), static_cast<int>(b.full.size()), MPI_FLOAT, 0, world.get()),
              "MPI_Bcast");
  } else {
    if (ours) return world.reduce_scatter<float>(b.full, b.shard);
    check_mpi(
        MPI_Reduce_scatter_block(b.full.data(), b.shard.data(), n, MPI_FLOAT, MPI_SUM, world.get()),
        "MPI_Reduce_scatter_block");
  }
}

// Runs `op` once on a known pattern and checks every element; an Error on every rank if wrong.
void check_result(const std::string& op, Impl impl, Buffers& b, const Comm& world) {
  const std::size_t n = b.shard.size();
  const int p = world.size(), r = world.rank();
  std::fill(b.shard.begin(), b.shard.end(), static_cast<float>(r));
  for (std::size_t i = 0; i < b.full.size(); ++i)
    b.full[i] = op == "all_reduce"  ? static_cast<float>(r + 1)
                : op == "broadcast" ? static_cast<float>(r == 0 ? i % 1000 : -1)
                                    : static_cast<float>(i / n + 1);
  float* array = impl == kWindow ? b.window->of<float>(r) : nullptr;
  const bool gathers = op == "all_gather";
  if (array && gathers)  // this rank's shard only
    for (std::size_t i = 0; i < b.full.size(); ++i)
      array[i] = i / n == static_cast<std::size_t>(r) ? float(r) : -1.0f;
  else if (array)
    std::copy(b.full.begin(), b.full.end(), array);
  call(op, impl, b, world);
  std::size_t wrong = 0;
  if (array && gathers) {  // the window's result lies in this rank's array
    for (std::size_t i = 0; i < b.full.size(); ++i) wrong += array[i] != static_cast<float>(i / n);
  } else if (array) {  // all of it, or shard r
    const std::size_t first = op == "all_reduce" ? 0 : r * n;
    const std::size_t len = op == "all_reduce" ? b.full.size() : n;
    const float want = op == "all_reduce" ? p * (p + 1) / 2 : p * (r + 1);
    for (std::size_t i = first; i < first + len; ++i) wrong += array[i] != want;
  } else if (op == "all_reduce") {
    for (float x : b.full) wrong += x != static_cast<float>(p * (p + 1) / 2);
  } else if (op == "all_gather") {
    for (std::size_t i = 0; i < b.full.size(); ++i) wrong += b.full[i] != static_cast<float>(i / n);
  } else if (op == "broadcast") {
    for (std::size_t i = 0; i < b.full.size(); ++i)
      wrong += b.full[i] != static_cast<float>(i % 1000);
  } else {
    for (float x : b.shard) wrong += x != static_cast<float>(p * (r + 1));
  }
  if (world.all_reduce_value<std::uint64_t>(wrong) != 0)
    fail(op + " by " + kImplNames[impl] + " gave a wrong result at " +
         std::to_string(b.full.size() * sizeof(float)) + " bytes");
}

std::string human_bytes(std::size_t bytes) {
  const char* units[] = {"B", "K", "M", "G"};
  int u = 0;
  while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + units[u];
}

struct Timing {
  int reps = 0;
  double seconds[kImpls] = {};  // per call, median; by Impl (0: not run)
};

// Times `op` on buffers of `elements` floats (a multiple of the group size); one_node: every
// rank on this node (the window path runs).
Timing measure(const std::string& op, std::size_t elements, double seconds, const Comm& world,
               bool one_node) {
  Buffers b{std::vector<float>(elements), std::vector<float>(elements / world.size()), nullptr};
  if (runs(kWindow, op, one_node))
    b.window = std::make_unique<SharedWindow>(world.get(), elements * sizeof(float));
  for (int impl = 0; impl < kImpls; ++impl)
    if (runs(Impl(impl), op, one_node)) check_result(op, Impl(impl), b, world);
  std::fill(b.full.begin(), b.full.end(), 0.0f);  // sums of zeros stay finite
  if (b.window) std::fill_n(b.window->of<float>(world.rank()), elements, 0.0f);

  // One repetition; the times are this rank's, so ranks' clocks never mix.
  std::vector<double> times[kImpls];
  auto repetition = [&](int i) {
    for (int k = 0; k < kImpls; ++k) {
      const Impl impl = Impl((i + k) % kImpls);  // rotate which goes first
      if (!runs(impl, op, one_node)) continue;
      world.barrier();
      const double t0 = MPI_Wtime();
      call(op, impl, b, world);
      times[impl].push_back(MPI_Wtime() - t0);
    }
  };
  const double t0 = MPI_Wtime();
  repetition(0);  // warm-up
  const double per_rep = world.all_reduce_value(MPI_Wtime() - t0, ReduceOp::max);

  Timing t;
  t.reps = std::clamp(static_cast<int>(seconds / per_rep), kMinReps, kMaxReps);
  for (std::vector<double>& v : times) v.clear();
  for (int i = 0; i < t.reps; ++i) repetition(i);
  for (int impl = 0; impl < kImpls; ++impl) {
    if (!runs(Impl(impl), op, one_node)) continue;
    // a call takes as long as its slowest rank (small: MPI's path)
    MPI_Allreduce(MPI_IN_PLACE, times[impl].data(), t.reps, MPI_DOUBLE, MPI_MAX, world.get());
    t.seconds[impl] = median(times[impl]);
  }
  return t;
}

// nccl-tests' bus bandwidth, GB/s: the bytes a rank sends through a ring, per second.
double bus_bandwidth(const std::string& op, std::size_t bytes, double seconds, int n) {
  const double b = static_cast<double>(bytes);
  if (op == "broadcast") return b / seconds / 1e9;
  return (op == "all_reduce" ? plan::ring_all_reduce_bytes(b, n) : plan::ring_gather_bytes(b, n)) /
         seconds / 1e9;
}

// One row of the table: each implementation's time and bus bandwidth, and the ratios.
void print_row(const std::string& op, std::size_t bytes, const Timing& t, int p) {
  const double* s = t.seconds;
  std::printf("%-15s %6s %5d %10.1f %8.3f %10.1f %8.3f %10.1f %8.3f %8.2f %8.2f", op.c_str(),
              human_bytes(bytes).c_str(), t.reps, s[kMpi] * 1e6,
              bus_bandwidth(op, bytes, s[kMpi], p), s[kTrident] * 1e6,
              bus_bandwidth(op, bytes, s[kTrident], p), s[kShm] * 1e6,
              bus_bandwidth(op, bytes, s[kShm], p), s[kMpi] / s[kShm], s[kTrident] / s[kShm]);
  if (s[kWindow] > 0)
    std::printf(" %10.1f %8.3f %8.2f\n", s[kWindow] * 1e6, bus_bandwidth(op, bytes, s[kWindow], p),
                s[kTrident] / s[kWindow]);
  else
    std::printf(" %10s %8s %8s\n", "-", "-", "-");
  std::fflush(stdout);
}

// The run's header, and the collectives' table's (when any runs).
void print_header(int p, int per_node, int threads, std::size_t shm_min_bytes, bool collectives) {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  const std::string library(version, std::find(version, version + length, '\n'));
  std::printf("# bench_comm: %d ranks, %d ranks per node, %d threads per rank; %s\n", p, per_node,
              threads, library.c_str());
  if (!collectives) return;
  std::printf(
      "# float32 sum; time = median over reps of the slowest rank's call; busbw as "
      "nccl-tests; x/shm > 1: shm is faster; Comm takes shm from %s up; window: in place "
      "in a shared window, as ZeRO's DP gradients and parameters on one node\n"
      "%-15s %6s %5s %10s %8s %10s %8s %10s %8s %8s %8s %10s %8s %8s\n",
      human_bytes(shm_min_bytes).c_str(), "op", "bytes", "reps", "mpi_us", "GB/s", "trident_us",
      "GB/s", "shm_us", "GB/s", "mpi/shm", "trid/shm", "window_us", "GB/s", "trid/win");
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, [](int argc, char** argv) {
    const Comm world = Comm::world();
    std::size_t min_bytes = 4 << 10, max_bytes = 64 << 20;
    double seconds = 1.0;
    std::vector<std::string> ops{"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                 "all_to_all"};
    cli::App app{"Time trident's collectives next to blocking MPI, interleaved in one run."};
    app.add_option("--min-bytes", min_bytes, "smallest message (full buffer), e.g. 4K")
        ->transform(cli::AsSizeValue(false));
    app.add_option("--max-bytes", max_bytes, "largest message; sizes grow by 4x, e.g. 64M")
        ->transform(cli::AsSizeValue(false));
    app.add_option("--ops", ops, "operations, comma-separated")
        ->delimiter(',')
        ->check(cli::IsMember(
            {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all"}));
    app.add_option("--seconds-per-size", seconds, "time to spend on each operation and size")
        ->check(cli::PositiveNumber);
    parse_command_line(app, argc, argv, world);
    if (min_bytes < 1 || min_bytes > max_bytes)
      fail("need 1 <= --min-bytes <= --max-bytes, got " + std::to_string(min_bytes) + " and " +
           std::to_string(max_bytes));

    const std::size_t shm_min_bytes = shm_tuning().min_bytes;
    const int threads = configure_threads(world);
    const int per_node = node_comm(world).size();
    // the window path needs the world's shared-memory segment (every rank on one node, real or
    // pretended: TRIDENT_SHM_NODE_RANKS); collective
    const bool one_node = shared_segment(world.get()) != nullptr;
    const int p = world.size();
    const bool collectives = std::any_of(ops.begin(), ops.end(),
                                         [](const std::string& op) { return op != "all_to_all"; });
    if (world.rank() == 0) print_header(p, per_node, threads, shm_min_bytes, collectives);

    for (const std::string& op : ops) {
      if (op == "all_to_all") continue;  // its own table, below
      for (std::size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
        // A multiple of the group size, at least one element per rank.
        const std::size_t elements = std::max<std::size_t>(bytes / sizeof(float) / p, 1) * p;
        const std::size_t actual = elements * sizeof(float);
        const Timing t = measure(op, elements, seconds, world, one_node);
        if (world.rank() == 0) print_row(op, actual, t, p);
      }
    }
    if (std::find(ops.begin(), ops.end(), "all_to_all") != ops.end())
      bench::all_to_all::table(world, seconds, one_node);
    return 0;
  });
}
