// trident/backend/ops.hpp: the array kernels the stack above the layers needs on a backend's
// memory — type conversion (bf16 storage), accumulation, sums, sums of squares — so that the
// ZeRO store, the optimizer and the trainer never touch device memory from host code.
// Each is one body (host_device.hpp) launched through B; sizes are element counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../core/bf16.hpp"
#include "device_buffer.hpp"
#include "host_device.hpp"

namespace trident::backend {

namespace ops_detail {
// bf16's rounding on the bits (core/bf16.hpp), written for host and device alike.
TRIDENT_HOST_DEVICE inline float widen(float x) {
  return x;
}
TRIDENT_HOST_DEVICE inline double widen(double x) {
  return x;
}
TRIDENT_HOST_DEVICE inline float widen(bf16 x) {
  return math::detail::bit_cast<float>(std::uint32_t(x.bits) << 16);
}
template <class To>
TRIDENT_HOST_DEVICE inline To narrow(float x) {
  if constexpr (std::is_same_v<To, bf16>) {
    std::uint32_t u = math::detail::bit_cast<std::uint32_t>(x);
    bf16 b;
    if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN stays a (quiet) NaN
      b.bits = static_cast<std::uint16_t>((u >> 16) | 0x40u);
      return b;
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    b.bits = static_cast<std::uint16_t>(u >> 16);
    return b;
  } else {
    return To(x);
  }
}
template <class To>
TRIDENT_HOST_DEVICE inline To narrow(double x) {
  if constexpr (std::is_same_v<To, bf16>)
    return narrow<bf16>(float(x));
  else
    return To(x);
}

template <class To, class From>
struct Convert {
  To* out;
  const From* in;
  TRIDENT_HOST_DEVICE void operator()(Index i) const { out[i] = narrow<To>(widen(in[i])); }
};
// acc = S(widen(acc) + widen(add)): a gradient accumulated in its storage type
template <class S, class T>
struct Accumulate {
  S* acc;
  const T* add;
  TRIDENT_HOST_DEVICE void operator()(Index i) const {
    acc[i] = narrow<S>(widen(acc[i]) + widen(add[i]));
  }
};
// a = b = S(widen(a) + widen(b)): the two copies of a tied gradient, summed alike
template <class S>
struct SumBoth {
  S* a;
  S* b;
  TRIDENT_HOST_DEVICE void operator()(Index i) const {
    a[i] = b[i] = narrow<S>(widen(a[i]) + widen(b[i]));
  }
};
// partial[c] = sum of squares of x[c K, (c+1) K), in double, in order
template <class G>
struct ChunkSquares {
  double* partial;
  const G* x;
  std::size_t n;
  int K;
  TRIDENT_HOST_DEVICE void operator()(int c) const {
    const std::size_t begin = std::size_t(c) * K;
    const int len = int(begin + K < n ? K : n - begin);
    const G* chunk = x + begin;  // an int loop from 0: contiguous SIMD loads, not gathers
    double sum = 0;
    TRIDENT_SIMD_SUM(sum)
    for (int k = 0; k < len; ++k) {
      const double v = widen(chunk[k]);
      sum += v * v;
    }
    partial[c] = sum;
  }
};
}  // namespace ops_detail

// out: (n) <- in: (n), converted (float, double, bf16; bf16 rounds to nearest even).
template <class B, class To, class From>
void convert(To* out, const From* in, std::size_t n) {
  if constexpr (std::is_same_v<To, From>)
    B::copy(out, in, n * sizeof(To));
  else
    B::elementwise(Index(n), ops_detail::Convert<To, From>{out, in});
}

// acc: (n) += add: (n), in the storage type S of acc.
template <class B, class S, class T>
void accumulate(S* acc, const T* add, std::size_t n) {
  B::elementwise(Index(n), ops_detail::Accumulate<S, T>{acc, add});
}

// a, b: (n) both <- a + b.
template <class B, class S>
void sum_both(S* a, S* b, std::size_t n) {
  B::elementwise(Index(n), ops_detail::SumBoth<S>{a, b});
}

// Sums of squares, in double, of ranges of B's memory (the gradient norm's pieces): each range
// is cut into chunks of kChunk elements summed in order, and the chunks' sums of all ranges
// cross to the host in one copy, where each range's are added in order: the same sums on every
// backend.
template <class B, class G>
class SquareSums {
 public:
  static constexpr int kChunk = 4096;

  // Records x: (n); its sum is the index-th of compute()'s, index = the number added before.
  void add(const G* x, std::size_t n) { ranges_.push_back({x, n}); }

  std::vector<double> compute() const {
    std::size_t chunks = 0;
    for (const Range& r : ranges_) chunks += (r.n + kChunk - 1) / kChunk;
    DeviceBuffer<double, B> partials(MemoryKind::buffers, chunks, Fill::none);
    std::size_t at = 0;
    for (const Range& r : ranges_) {
      const int c = int((r.n + kChunk - 1) / kChunk);
      if (c > 0)
        B::for_each(c, ops_detail::ChunkSquares<G>{partials.data() + at, r.x, r.n, kChunk});
      at += c;
    }
    std::vector<double> host(chunks), sums;
    download(partials, host.data());  // counted: one crossing per call
    at = 0;
    for (const Range& r : ranges_) {
      double s = 0;
      for (std::size_t k = 0; k < (r.n + kChunk - 1) / kChunk; ++k) s += host[at++];
      sums.push_back(s);
    }
    return sums;
  }

 private:
  struct Range {
    const G* x;
    std::size_t n;
  };
  std::vector<Range> ranges_;
};

}  // namespace trident::backend
