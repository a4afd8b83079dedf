// tests/mpi_test.hpp: what a trident test needs to run under mpiexec with doctest.
//
// Every rank runs every test case in the same order. A test that needs n ranks asks for them
// with TRIDENT_RANKS(n, comm): the first n world ranks get `comm` and run the body; the other
// ranks return at once (use first_ranks() directly inside loops, where `return` would leave
// the other iterations' collectives). When fewer than n ranks were launched the test is skipped
// everywhere and counted; the runner fails a run started with --no-skip that skipped anything.
#pragma once

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include <trident/core/comm.hpp>

namespace trident::test {

inline std::vector<std::string>& skipped() {
  static std::vector<std::string> names;
  return names;
}

inline const Comm& world() {
  static const Comm w = Comm::world();
  return w;
}

// The first n ranks of the world, on those ranks. Collective over the world.
inline std::optional<Comm> first_ranks(int n, const char* test_name) {
  if (world().size() < n) {
    skipped().push_back(std::string(test_name) + " (needs " + std::to_string(n) + " ranks)");
    return std::nullopt;
  }
  Comm c = world().split(world().rank() < n ? 0 : Comm::kUndefined, world().rank(), "test");
  if (!c.valid()) return std::nullopt;
  return c;
}

// The name of the running test case, set by the runner's doctest listener.
inline const char*& current_test_name() {
  static const char* name = "?";
  return name;
}

}  // namespace trident::test

#define TRIDENT_RANKS(n, comm)                                                                \
  auto comm##_slot = ::trident::test::first_ranks((n), ::trident::test::current_test_name()); \
  if (!comm##_slot) return;                                                                   \
  const ::trident::Comm& comm = *comm##_slot
