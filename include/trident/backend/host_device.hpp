// trident/backend/host_device.hpp: TRIDENT_HOST_DEVICE, the mark of a kernel body written once.
//
// A kernel's per-element or per-row body (backend/kernels/) is a function object whose
// operator() is TRIDENT_HOST_DEVICE: under nvcc it is __host__ __device__, so a CUDA launcher
// (cuda/launch.cuh) runs it on the GPU; under a plain C++ compiler the mark is empty and the CPU
// backend (cpu/cpu.hpp) runs the same body in a host loop. The host-side tests therefore check
// the device's arithmetic against nn/'s layers without a GPU.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define TRIDENT_HOST_DEVICE __host__ __device__
#else
#define TRIDENT_HOST_DEVICE
#endif

namespace trident::backend::math {

// The math of a kernel body: std:: on the host, CUDA's overloads (float and double) on the
// device; one spelling for both.
template <class T>
TRIDENT_HOST_DEVICE inline T exp(T x) {
  using std::exp;
  return exp(x);
}
template <class T>
TRIDENT_HOST_DEVICE inline T log(T x) {
  using std::log;
  return log(x);
}
template <class T>
TRIDENT_HOST_DEVICE inline T sqrt(T x) {
  using std::sqrt;
  return sqrt(x);
}
template <class T>
TRIDENT_HOST_DEVICE inline T tanh(T x) {
  using std::tanh;
  return tanh(x);
}
template <class T>
TRIDENT_HOST_DEVICE inline T max(T a, T b) {
  return a < b ? b : a;
}

}  // namespace trident::backend::math
