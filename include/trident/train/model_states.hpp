// trident/train/model_states.hpp: building a rank's model states (parameters, gradients and
// optimizer states: the ZeRO paper's term), agreed over the world.
//
// A device too small for them is one Error on every rank, the lowest failing rank's, not a hang
// (ARCHITECTURE §4.1: DeviceOutOfMemory, agreed while the trainer builds its stages; one met
// later, in a step, is its rank's alone). The only collective of the stores' construction, the
// DP group's shared-memory segment (zero/unit_store.hpp), is made first, so that no rank waits
// in it for a rank that has failed.
#pragma once

#include <string>

#include "../backend/caching_allocator.hpp"
#include "../core/comm.hpp"
#include "../core/environment.hpp"
#include "../core/shared_memory.hpp"

namespace trident {

// Runs build() (the stores' allocations; no collective but the segment over dp) on every rank
// of `world`; a DeviceOutOfMemory on any rank is the same Error on all of them.
template <class Build>
void build_model_states(const Comm& world, const Comm& dp, Build&& build) {
  if (shm_tuning().enabled && dp.size() > 1) (void)shared_segment(dp.get());
  std::string failed;
  try {
    build();
  } catch (const backend::DeviceOutOfMemory& e) {
    failed = std::string(e.what()) + " (rank " + std::to_string(world.rank()) +
             ", building its model states)";
  }
  agree(world, failed.empty(), failed);
}

}  // namespace trident
