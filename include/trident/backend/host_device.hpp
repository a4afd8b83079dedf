// trident/backend/host_device.hpp: TRIDENT_HOST_DEVICE, the mark of a kernel body written once,
// and the math such a body calls.
//
// A layer's kernel body (nn/) is a function object whose operator() is TRIDENT_HOST_DEVICE:
// under nvcc it is __host__ __device__, so the CUDA backend (cuda/launch.cuh) runs it on the
// GPU; under a plain C++ compiler the mark is empty and the CPU backends (cpu/cpu.hpp,
// emulated/emulated.hpp) run the same body in an OpenMP loop. One body, one arithmetic.
//
// On the host a body's loops are SIMD loops (OpenMP `simd`, reductions included: a plain
// floating-point sum stays scalar, the compiler may not reorder it), and math::exp is written
// so that such a loop vectorises it (std::exp is a library call per element): range reduction
// x = n ln 2 + r and a polynomial (float) or rational function (double) of r, as Cephes does
// (Moshier, "Methods and Programs for Mathematical Functions", 1989), 2^n put in the exponent
// bits; 1-2 ulp. On a GPU the bodies call CUDA's own exp. The pragmas vanish on the device.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TRIDENT_HOST_DEVICE __host__ __device__
#else
#define TRIDENT_HOST_DEVICE
#endif

#define TRIDENT_PRAGMA(x) _Pragma(#x)
#if defined(__CUDA_ARCH__)
#define TRIDENT_SIMD
#define TRIDENT_SIMD_SUM(...)
#define TRIDENT_SIMD_MAX(v)
#else
// The next loop is a SIMD loop (its iterations independent), with `+` reductions into the
// variables named, or a `max` reduction into v.
#define TRIDENT_SIMD TRIDENT_PRAGMA(omp simd)
#define TRIDENT_SIMD_SUM(...) TRIDENT_PRAGMA(omp simd reduction(+ : __VA_ARGS__))
#define TRIDENT_SIMD_MAX(v) TRIDENT_PRAGMA(omp simd reduction(max : v))
#endif

namespace trident::backend {
// The element index and count of an elementwise launch: 64-bit, since a flat buffer passes
// 2^31 elements (the flat parameters, gradients and moments of a model past 2B parameters; a
// (B*T, V) logits matrix from ~42 sequences of 1024 tokens at GPT-2's vocabulary). Row and
// column-block launches count rows in int; their bodies offset rows in std::ptrdiff_t.
using Index = std::int64_t;
}  // namespace trident::backend

namespace trident::backend::math {

namespace detail {
template <class To, class From>
TRIDENT_HOST_DEVICE inline To bit_cast(From x) {
#if defined(__CUDA_ARCH__)
  To y;
  memcpy(&y, &x, sizeof y);
  return y;
#else
  return __builtin_bit_cast(To, x);
#endif
}

// exp(x) for float: x = n ln2 + r (ln2 in two parts), exp(r) by a degree-7 polynomial, 2^n
// from the exponent bits. Branch-free: exact 0 below the smallest normal result.
TRIDENT_HOST_DEVICE inline float host_exp(float x) {
  const bool under = x < -87.3365447505f;  // exp(x) below FLT_MIN
  x = under ? -87.3365447505f : x;
  x = x > 88.3762626647950f ? 88.3762626647950f : x;
  const float shift = 12582912.0f;  // 1.5 * 2^23: x * log2(e) + shift rounds to an integer
  float fx = x * 1.44269504088896341f + shift;
  const std::int32_t n = bit_cast<std::int32_t>(fx) - bit_cast<std::int32_t>(shift);
  fx -= shift;
  x = x - fx * 0.693359375f;
  x = x + fx * 2.12194440e-4f;
  float y = 1.9875691500E-4f;
  y = y * x + 1.3981999507E-3f;
  y = y * x + 8.3334519073E-3f;
  y = y * x + 4.1665795894E-2f;
  y = y * x + 1.6666665459E-1f;
  y = y * x + 5.0000001201E-1f;
  y = y * (x * x) + x + 1.0f;
  const float r = y * bit_cast<float>((n + 127) << 23);
  return under ? 0.0f : r;
}

// exp(x) for double: exp(r) = 1 + 2 r P(r^2) / (Q(r^2) - r P(r^2)), Cephes's rational form.
TRIDENT_HOST_DEVICE inline double host_exp(double x) {
  const bool under = x < -708.3964185322641;  // exp(x) below DBL_MIN
  x = under ? -708.3964185322641 : x;
  x = x > 709.0 ? 709.0 : x;
  const double shift = 6755399441055744.0;  // 1.5 * 2^52
  double fx = x * 1.4426950408889634 + shift;
  const std::int64_t n = bit_cast<std::int64_t>(fx) - bit_cast<std::int64_t>(shift);
  fx -= shift;
  x = x - fx * 6.93145751953125E-1;
  x = x - fx * 1.42860682030941723212E-6;
  const double xx = x * x;
  const double px = x * ((1.26177193074810590878E-4 * xx + 3.02994407707441961300E-2) * xx + 1.0);
  const double qx = ((3.00198505138664455042E-6 * xx + 2.52448340349684104192E-3) * xx +
                     2.27265548208155028766E-1) *
                        xx +
                    2.0;
  const double y = 1.0 + 2.0 * (px / (qx - px));
  const double r = y * bit_cast<double>((n + 1023) << 52);
  return under ? 0.0 : r;
}
}  // namespace detail

// The math of a kernel body: one spelling for the host (vectorisable exp) and the device.
template <class T>
TRIDENT_HOST_DEVICE inline T exp(T x) {
#if defined(__CUDA_ARCH__)
  return ::exp(x);
#else
  return detail::host_exp(x);
#endif
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
TRIDENT_HOST_DEVICE inline T max(T a, T b) {
  return a < b ? b : a;
}
template <class T>
TRIDENT_HOST_DEVICE inline T min(T a, T b) {
  return b < a ? b : a;
}
// 1 / (1 + exp(-x)); exact 0 and 1 at the ends.
template <class T>
TRIDENT_HOST_DEVICE inline T sigmoid(T x) {
  return T(1) / (T(1) + exp(-x));
}
// tanh(x) = (1 - e) / (1 + e), e = exp(-2|x|): no overflow, the sign restored.
template <class T>
TRIDENT_HOST_DEVICE inline T tanh(T x) {
  const T a = x < T(0) ? -x : x;
  const T e = exp(T(-2) * a);
  const T t = (T(1) - e) / (T(1) + e);
  return x < T(0) ? -t : t;
}

}  // namespace trident::backend::math
