// trident/io/hardware_peak.hpp: the peak of MFU (train/mfu.hpp) for the hardware a run is on.
//
// On a GPU (a backend whose kernels are not host code): the datasheet's dense peak for the run's
// precision, times the distinct GPUs the ranks use (ranks that share one count it once). On the
// CPU (and the emulated device, which is the CPU): the GEMM rate this machine gives, measured in
// the compute type with every rank multiplying at once (backend/gemm_rate.hpp: the three
// products of a linear layer at 512 x 512 x 1024, the slowest rank's, median of 3), times the
// ranks: what the cores do for GEMMs, not a datasheet's vector peak, so a CPU run's MFU is its
// share of what the BLAS reaches here. Kept in the calibration cache (io/calibration_cache.hpp) per
// machine and build, so runs on the same build divide by the same peak.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "../backend/gemm_rate.hpp"
#include "../train/mfu.hpp"
#include "calibration_cache.hpp"

namespace trident {

namespace peak_detail {
// The distinct (host, device) pairs of the world's ranks. Collective.
inline int distinct_devices(const Comm& world, const std::string& device) {
  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  std::uint64_t key = 1469598103934665603ull;  // FNV-1a of "host|device"
  for (char ch : std::string(host) + "|" + device)
    key = (key ^ (unsigned char)ch) * 1099511628211ull;
  std::vector<std::uint64_t> keys(std::size_t(world.size()));
  world.all_gather(Span<const std::uint64_t>(&key, 1), Span<std::uint64_t>(keys));
  return static_cast<int>(std::set<std::uint64_t>(keys.begin(), keys.end()).size());
}
}  // namespace peak_detail

// Collective: every rank gets the same peak. `cache_path` "" measures without keeping it.
template <class T, class B>
HardwarePeak hardware_peak(const Comm& world, const std::string& precision,
                           const std::string& cache_path) {
  HardwarePeak p;
  if constexpr (!B::kHostKernels) {
    const std::string device = B::device_name();
    p.per_device = datasheet_peak_flops(device, precision, int(sizeof(T)));
    p.devices = peak_detail::distinct_devices(world, device);
    p.flops = p.per_device * p.devices;
    p.source = p.per_device > 0 ? "datasheet: " + device + ", dense " +
                                      (precision == "bf16" ? std::string("BF16")
                                       : sizeof(T) == 8    ? std::string("FP64")
                                                           : std::string("FP32")) +
                                      " peak"
                                : "no datasheet peak known for " + device + ": MFU not computed";
    return p;
  } else {
    const char* type = sizeof(T) == 8 ? "double" : "float";
    const std::string what = std::string("gemm_peak ") + type + " 512x512x1024";
    CalibrationCache cache(world, cache_path);
    if (auto v = cache.find(what, 1)) {
      p.per_device = (*v)[0];
    } else {
      p.per_device = backend::measure_gemm_flops<T>(world, 512, 512, 1024, 0, 0);
      cache.put(what, {p.per_device});
      cache.save(world);
    }
    p.devices = world.size();
    p.flops = p.per_device * p.devices;
    p.source = std::string("measured on this machine: ") + (sizeof(T) == 8 ? "d" : "s") +
               "gemm 512x512x1024 with all " + std::to_string(world.size()) + " ranks at once" +
               (cache.reused() > 0     ? ", by an earlier run of this build (" + cache.path() + ")"
                : cache.path().empty() ? ""
                                       : ", kept in " + cache.path());
    return p;
  }
}

}  // namespace trident
