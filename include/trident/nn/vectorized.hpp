// trident/nn/vectorized.hpp: how nn/ runs elementwise math in SIMD registers.
//
// Loops over raw pointers with std::exp or std::tanh, or with a floating-point reduction, stay
// scalar (the compiler may not reorder a sum, nor call a vector exp, without -ffast-math).
// Eigen's array expressions over the same pointers are vectorised, exp and tanh included (for
// double, Eigen 3.4 vectorises exp and falls back to std::tanh). Long loops are cut into chunks
// spread over the OpenMP threads.
#pragma once

#include <algorithm>
#include <cstddef>

#include "../core/matrix.hpp"

namespace trident::nn {

template <class T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using CArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

inline constexpr std::ptrdiff_t kChunk = 4096;  // elements per chunk: 16 KiB of float

// A chunk's temporary, on the stack.
template <class T>
using ChunkArray = Eigen::Array<T, Eigen::Dynamic, 1, 0, kChunk, 1>;

// Calls body(begin, end) for the chunks [begin, end) that tile [0, n), in parallel.
template <class Body>
void for_chunks(std::size_t n, const Body& body) {
  const auto size = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t a = 0; a < size; a += kChunk) body(a, std::min(size, a + kChunk));
}

}  // namespace trident::nn
