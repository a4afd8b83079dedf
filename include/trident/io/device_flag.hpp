// trident/io/device_flag.hpp: --device, the hardware a training program is asked to run on.
//
// cpu (the default) is the trainer as it is. cuda is checked and refused with one Error, the
// same on every rank (agree: the first failing rank's text): a build without the CUDA backend
// says how to get one; a CUDA build names the device it found missing, or, with a GPU visible,
// says what exists today (backend::Cuda's kernels, cuBLAS GEMMs and device memory, tested in
// tests/cuda) and that the trainer does not run on it yet.
#pragma once

#include <string>

#include "../core/environment.hpp"
#include "../core/error.hpp"
#if defined(TRIDENT_WITH_CUDA)
#include "../backend/cuda/device.hpp"
#endif

namespace trident {

inline void check_device_flag(const Comm& world, const std::string& device) {
  if (device == "cpu") return;
  require(device == "cuda", "--device: expected cpu or cuda, got '" + device + "'");
#if defined(TRIDENT_WITH_CUDA)
  const auto visible = backend::cuda::visible_devices();
  agree(world, visible.count > 0,
        "--device cuda: no CUDA device is visible to this process (" + visible.reason + ")");
  fail(
      "--device cuda: the trainer does not run on the GPU yet; backend::Cuda has the kernels "
      "of every layer, cuBLAS GEMMs and counted device memory (tests/cuda), the trainer runs on "
      "--device cpu");
#else
  (void)world;
  fail(
      "--device cuda: this program was built without the CUDA backend (configure with "
      "-DTRIDENT_WITH_CUDA=ON); it runs on --device cpu");
#endif
}

}  // namespace trident
