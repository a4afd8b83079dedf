// trident/core/environment.hpp: MPI start-up and shut-down, and a main() that fails cleanly.
#pragma once

#include <mpi.h>
#include <poll.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>

#include "comm.hpp"
#include "error.hpp"

namespace trident {

namespace detail {
// Tells the process manager this rank has finished, as MPI_Finalize does: on the PMI-1 wire
// (MPICH's hydra; the socket is PMI_FD) "cmd=finalize", answered by "cmd=finalize_ack". Waits at
// most 10 s for the answer; does nothing where there is no PMI_FD (a singleton, another launcher).
inline void announce_finalize() {
  const char* fd_text = std::getenv("PMI_FD");
  if (!fd_text || *fd_text < '0' || *fd_text > '9') return;
  const int fd = std::atoi(fd_text);
  static const char request[] = "cmd=finalize\n";
  if (::write(fd, request, sizeof request - 1) != ssize_t(sizeof request - 1)) return;
  pollfd answer{fd, POLLIN, 0};
  char ack[64];
  if (::poll(&answer, 1, 10000) == 1) (void)::read(fd, ack, sizeof ack);
}
}  // namespace detail

// RAII over MPI_Init_thread / MPI_Finalize. MPI errors are returned (and thrown as MpiError by
// check_mpi) instead of aborting inside MPI. Also makes the watchdog's side channel, a duplicate
// of MPI_COMM_WORLD (watchdog.hpp).
class Environment {
 public:
  Environment(int& argc, char**& argv) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check_mpi(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
      owns_ = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (watchdog::channel() == MPI_COMM_NULL) {
      check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &watchdog::channel()), "MPI_Comm_dup");
      owns_channel_ = true;
    }
  }
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
  ~Environment() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_channel_ && !finalized) MPI_Comm_free(&watchdog::channel());
    if (owns_ && !finalized) MPI_Finalize();
  }

 private:
  bool owns_ = false, owns_channel_ = false;
};

// The end of a program that returns `status` on every rank. Where TRIDENT_EXIT_WITHOUT_FINALIZE
// is set (cmake/cluster.sh sets it), every rank leaves after a barrier without MPI_Finalize:
// UCX 1.13's TCP transport, Debian 12's MPICH, can hang in MPI_Finalize closing its connections
// after traffic over a slow link (openucx/ucx#8738). Collective then.
// A rank that has reached here has its status: the hang-up that tearing the job down may send
// to a node's last ranks (their launcher's session ends as the first nodes' ranks leave) is
// ignored, and the process manager is told that the rank has finished (the part of
// MPI_Finalize it needs): hydra takes a rank that exits unannounced for a crash and kills the
// ranks still leaving with signal 9, which turned correct runs into exit status 9 (or 255).
inline int leave(int status) {
  if (!std::getenv("TRIDENT_EXIT_WITHOUT_FINALIZE")) return status;
  std::signal(SIGHUP, SIG_IGN);
  MPI_Barrier(MPI_COMM_WORLD);
  std::fflush(stdout);
  std::fflush(stderr);
  detail::announce_finalize();
  std::_Exit(status);
}

// `text` of rank `root`, on every rank. Collective over `comm`.
inline std::string broadcast_text(const Comm& comm, const std::string& text, int root) {
  std::uint64_t length = comm.rank() == root ? text.size() : 0;
  comm.broadcast(Span<std::uint64_t>(&length, 1), root);
  std::string out = comm.rank() == root ? text : std::string(length, ' ');
  if (length > 0) comm.broadcast(Span<char>(out.data(), out.size()), root);
  return out;
}

// Turns a condition that may differ between ranks (a file readable on one rank only, say) into
// the same outcome everywhere: if any rank has !ok, every rank throws Error with the message of
// the lowest such rank. Collective over `comm`.
inline void agree(const Comm& comm, bool ok, const std::string& message) {
  const int first_bad = comm.all_reduce_value(ok ? comm.size() : comm.rank(), ReduceOp::min);
  if (first_bad == comm.size()) return;
  throw Error(broadcast_text(comm, message, first_bad));
}

// Runs body() on every rank. trident::Error (bad input, identical on every rank by contract)
// is printed once by rank 0 and every rank exits with status 1; anything else is unexpected,
// is printed with its rank, and aborts the job so that no rank is left waiting.
template <class Body>
int run_main(int argc, char** argv, Body&& body) {
  Environment env(argc, argv);
  const Comm world = Comm::world();
  try {
    return leave(body(argc, argv));
  } catch (const ExitRequest& e) {
    return leave(e.code);
  } catch (const MpiError& e) {
    std::fprintf(stderr, "trident: rank %d: %s\n", world.rank(), e.what());
  } catch (const RankError& e) {  // this rank alone: the others may wait for it, so abort
    std::fprintf(stderr, "trident: rank %d: %s\n", world.rank(), e.what());
  } catch (const Error& e) {
    if (world.rank() == 0) std::fprintf(stderr, "error: %s\n", e.what());
    return leave(1);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "trident: rank %d: out of memory: the model or batch does not fit\n",
                 world.rank());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trident: rank %d: unexpected error: %s\n", world.rank(), e.what());
  }
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 2);
  return 2;
}

}  // namespace trident
