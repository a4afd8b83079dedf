// trident/detail/eigen.hpp: the one place trident includes Eigen.
//
// GCC 12's AVX-512 intrinsics warn about their own `__Y = __Y` idiom once inlined into Eigen's
// GEMM (GCC bug 105593, fixed in GCC 13); the warning says nothing about trident's code, so it
// is silenced where Eigen (and with it the intrinsics) is first included.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <Eigen/Core>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
