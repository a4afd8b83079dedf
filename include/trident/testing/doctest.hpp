// trident/testing/doctest.hpp: the parity kit's reports as doctest checks — the report's table is
// the failure message.
//
//   TEST_CASE("my model: every mesh against one process") {
//     trident::testing::check(trident::testing::check_parity(world, model, data, base));
//   }
#pragma once

#include <doctest/doctest.h>

#include "gradcheck_parts.hpp"
#include "parity.hpp"

namespace trident::testing {

inline void check(const ParityReport& r) {
  CHECK_MESSAGE(r.ok(), r.text());
}
inline void check(const GradientReport& r) {
  CHECK_MESSAGE(r.ok(), r.text());
}

}  // namespace trident::testing
