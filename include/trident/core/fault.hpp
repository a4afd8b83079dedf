// trident/core/fault.hpp: faults injected on purpose, for the tests of what survives them.
//
// TRIDENT_FAULT=KIND:rank=R:step=S arms one fault: world rank R does KIND at step S (e.g.
// kill-during-save: rank R dies by SIGKILL while writing the checkpoint of step S). Unset, no
// fault is ever armed; a malformed value is an Error (the same on every rank).
#pragma once

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "error.hpp"

namespace trident::fault {

struct Spec {
  std::string kind;
  int rank = -1;
  int step = -1;
};

// TRIDENT_FAULT parsed; nullopt when the variable is unset or empty.
inline std::optional<Spec> from_environment() {
  const char* text = std::getenv("TRIDENT_FAULT");
  if (text == nullptr || *text == '\0') return std::nullopt;
  const std::string value = text;
  auto bad = [&]() {
    fail("TRIDENT_FAULT='" + value + "': expected KIND:rank=R:step=S (R, S non-negative)");
  };
  auto number = [&](const std::string& field, const char* key) {
    const std::size_t n = std::strlen(key);
    if (field.compare(0, n, key) != 0 || field.size() == n || field.size() > n + 9) bad();
    for (std::size_t k = n; k < field.size(); ++k)
      if (field[k] < '0' || field[k] > '9') bad();
    return std::stoi(field.substr(n));
  };
  const std::size_t a = value.find(':'), b = a == std::string::npos ? a : value.find(':', a + 1);
  if (a == 0 || b == std::string::npos || value.find(':', b + 1) != std::string::npos) bad();
  Spec s;
  s.kind = value.substr(0, a);
  s.rank = number(value.substr(a + 1, b - a - 1), "rank=");
  s.step = number(value.substr(b + 1), "step=");
  return s;
}

// Whether TRIDENT_FAULT names this kind, rank and step.
inline bool armed(const char* kind, int rank, int step) {
  const std::optional<Spec> s = from_environment();
  return s && s->kind == kind && s->rank == rank && s->step == step;
}

}  // namespace trident::fault
