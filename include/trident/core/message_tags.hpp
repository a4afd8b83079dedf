// trident/core/message_tags.hpp: every point-to-point message tag trident uses, and the
// communicator it travels on.
//
// MPI matches a message by (communicator, source, tag), so two kinds of message may share a tag
// only on different communicators, or where one kind is never in flight while the other is.
// MPI guarantees tags up to MPI_TAG_UB >= 32767; every tag here is below it.
#pragma once

namespace trident::message_tags {

// --- The pipeline group (mesh.pp()) ---
// The executor's activations and their gradients (pp/executor.hpp): tag (receiving chunk *
// microbatches + microbatch) * 2 + direction (0 forward, 1 backward), so a step's tags are
// [0, pipeline_tags(chunks, microbatches)).
constexpr long long pipeline_tags(int chunks, int microbatches) {
  return 2LL * chunks * microbatches;
}
constexpr int pipeline_tag(int receiving_chunk, int microbatch, int microbatches, bool backward) {
  return (receiving_chunk * microbatches + microbatch) * 2 + (backward ? 1 : 0);
}
// The tied-gradient exchange after the last backward (train/ties.hpp), above every pipeline tag
// of the step (train/options.hpp's validate checks pipeline_tags <= kTiedGradients).
inline constexpr int kTiedGradients = 32000;
// Gathering whole tensors on stage 0 (train/collect.hpp), between steps: no pipeline message is
// in flight then.
inline constexpr int kCollectSizes = 0, kCollectHeads = 1, kCollectNames = 2, kCollectData = 3;

// --- The context-parallel ring (ContextParallel's group, cp/context_parallel.hpp) ---
// Ring attention's blocks of keys and values, and of their gradients (cp/ring_attention.hpp).
inline constexpr int kRingKeys = 1, kRingGradients = 2;

// --- Communicators of their own ---
// The watchdog's announcements, on its side channel (core/watchdog.hpp).
inline constexpr int kWatchdog = 7;
// NCCL's untagged point-to-point emulated over MPI, one tag on a duplicate of the group
// (backend/emulated/mpi_nccl.hpp).
inline constexpr int kEmulatedNccl = 0;
// The round trips that align rank clocks with rank 0's (train/waits.hpp, clock_offset).
inline constexpr int kClock = 0;

// --- The cost model's measurements, outside any training run ---
// A send within a pair of ranks, on the pair's group (costmodel/calibrate.hpp); the exchange
// that probes the link between two nodes, on the world (costmodel/inter_node.hpp).
inline constexpr int kCalibration = 0, kInterNodeProbe = 7;

}  // namespace trident::message_tags
