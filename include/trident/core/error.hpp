// trident/core/error.hpp: the library's exception types and checks.
//
// Two kinds of failure:
//  - trident::Error: bad input (a mesh that does not fit the world, a shape not divisible by TP,
//    an unreadable file). Checks of input are deterministic, so every rank throws the same
//    message and the program can exit cleanly everywhere, without a hang.
//  - trident::MpiError: an MPI call returned an error code; the message carries
//    MPI_Error_string and the world rank.
#pragma once

#include <mpi.h>

#include <stdexcept>
#include <string>

namespace trident {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class MpiError : public Error {
 public:
  MpiError(const std::string& what, int code) : Error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// An error of this rank alone, found where the other ranks cannot know of it (a device out of
// memory in the middle of a step): run_main prints it with the rank and ends the job, where
// waiting for the others would hang.
class RankError : public Error {
 public:
  using Error::Error;
};

// Throws Error(message) unless `ok`. Callers build the message only on failure when it is costly:
// `if (!ok) fail(...)`.
inline void require(bool ok, const std::string& message) {
  if (!ok) throw Error(message);
}

// Thrown to end the program early with `code` on every rank (e.g. after --help); not an error.
struct ExitRequest {
  int code = 0;
};

[[noreturn]] inline void fail(const std::string& message) {
  throw Error(message);
}

// Turns an MPI return code into an MpiError naming the call, the error string and the rank.
inline void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  int rank = -1;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw MpiError(std::string(call) + " failed on rank " + std::to_string(rank) + ": " +
                     std::string(text, static_cast<size_t>(length)),
                 code);
}

}  // namespace trident
