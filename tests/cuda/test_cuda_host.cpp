// tests/cuda/test_cuda_host.cpp: the CUDA backend's host-side logic, no GPU needed: the
// row-major -> column-major GEMM mapping cuBLAS gets, the caching allocator (reuse, the
// out-of-memory Error naming the device and the bytes), and what the runtime says about devices.
#include <trident/backend/caching_allocator.hpp>
#include <trident/backend/cpu/gemm.hpp>
#include <trident/backend/cuda/column_major.hpp>
#include <trident/backend/cuda/device.hpp>
#include <trident/backend/cuda/select_device.hpp>
#include <trident/io/device_flag.hpp>

#include <map>
#include <string>
#include <vector>

#include "../mpi_test.hpp"
#include "layer_checks.hpp"

using namespace trident;
using namespace trident::test;

namespace {
// What a column-major BLAS (cuBLAS's convention) computes, by loops: C = op(X) op(Y) + beta C
// with X (m, k) or its transpose stored column-major with leading dimension ldx, and so on.
void column_major_gemm(bool tx, bool ty, int m, int n, int k, const double* X, int ldx,
                       const double* Y, int ldy, double beta, double* C, int ldc) {
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int p = 0; p < k; ++p)
        sum += (tx ? X[p + i * ldx] : X[i + p * ldx]) * (ty ? Y[j + p * ldy] : Y[p + j * ldy]);
      C[i + j * ldc] = sum + beta * C[i + j * ldc];
    }
}

// Host memory standing in for a device of `capacity` bytes.
struct LimitedSource {
  explicit LimitedSource(std::size_t bytes = 0) : capacity(bytes) {}
  std::size_t capacity, used = 0;
  std::map<void*, std::size_t> blocks;
  int allocations = 0;
  void* allocate(std::size_t bytes) {
    if (used + bytes > capacity) return nullptr;
    used += bytes;
    ++allocations;
    void* p = ::operator new(bytes);
    blocks[p] = bytes;
    return p;
  }
  void free(void* p) {
    used -= blocks.at(p);
    blocks.erase(p);
    ::operator delete(p);
  }
  std::string name() const { return "cuda:0 (test device)"; }
};
}  // namespace

TEST_CASE("cuBLAS mapping: the column-major call computes the row-major GEMM") {
  const int M = 5, N = 4, K = 3, lda = 9, ldb = 7, ldc = 6;
  const Vec A = random_values(std::max(M, K) * lda, 1), B = random_values(std::max(N, K) * ldb, 2);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (double beta : {0.0, 1.0, 0.5}) {
        Vec expected = random_values(M * ldc, 3), got = expected;
        backend::gemm<double>(backend::view(expected.data(), M, N, ldc),
                              backend::cview(A.data(), ta ? K : M, ta ? M : K, lda),
                              backend::cview(B.data(), tb ? N : K, tb ? K : N, ldb), ta, tb, beta);
        const auto g = backend::cuda::column_major(ta, tb, M, N, K, lda, ldb, ldc);
        column_major_gemm(g.trans_first, g.trans_second, g.m, g.n, g.k, B.data(), g.ld_first,
                          A.data(), g.ld_second, beta, got.data(), g.ldc);
        INFO("trans_a " << ta << " trans_b " << tb << " beta " << beta);
        CHECK(relative_error(got, expected) <= kRelative);
      }
}

TEST_CASE("caching allocator: blocks are reused by size; out of memory names device and bytes") {
  backend::CachingAllocator<LimitedSource> alloc(LimitedSource{4096});
  void* a = alloc.take(1000);  // rounded to 1024
  alloc.give(a, 1000);
  CHECK(alloc.cached_bytes() == 1024);
  CHECK(alloc.take(900) == a);  // same rounded size: the cached block, no new allocation
  CHECK(alloc.source().allocations == 1);
  CHECK(alloc.live_bytes() == 1024);
  void* b = alloc.take(2048);
  alloc.give(b, 2048);
  // 1024 live + 2048 cached: 3000 bytes do not fit until the cached block is released.
  void* c = alloc.take(3000);
  CHECK(alloc.cached_bytes() == 0);
  CHECK(alloc.live_bytes() == 1024 + 3072);
  try {
    alloc.take(100);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.rfind(
              "cuda:0 (test device): out of memory: asked for 100 bytes, 4096 bytes held by live "
              "buffers (this process's buffers by kind, bytes: parameters ",
              0) == 0);
    CHECK(dynamic_cast<const backend::DeviceOutOfMemory*>(&e) != nullptr);
  }
  alloc.give(c, 3000);
  alloc.give(a, 900);
}

TEST_CASE("devices: none visible is an answer with its reason; require_device names it") {
  const auto v = backend::cuda::visible_devices();
  if (v.count > 0) {
    CHECK(v.reason.empty());
    CHECK(backend::cuda::device_name(0).rfind("cuda:0 (", 0) == 0);
    return;
  }
  MESSAGE("no CUDA device visible: " << v.reason);
  CHECK(v.reason.rfind("cudaGetDeviceCount: ", 0) == 0);
  CHECK_THROWS_WITH_AS(backend::cuda::require_device(),
                       doctest::Contains("no CUDA device is visible"), Error);
}

TEST_CASE("ranks onto GPUs: one each, or an equal share each; otherwise an Error") {
  using backend::cuda::device_of_rank;
  CHECK(device_of_rank(1, 2, 8) == 1);  // NCCL: one GPU per rank
  CHECK(device_of_rank(3, 4, 1) == 0);  // host staging: four ranks share one GPU
  CHECK(device_of_rank(3, 4, 2) == 1);
  CHECK_THROWS_WITH_AS(device_of_rank(0, 3, 2),
                       "3 ranks on a node do not map onto its 2 GPUs: use at most one rank per "
                       "GPU or a multiple of the GPU count",
                       Error);
  CHECK_THROWS_WITH_AS(device_of_rank(0, 1, 0), "device cuda: no CUDA device is visible", Error);
}

TEST_CASE("select_device with no GPU: the same Error on every rank, no hang") {
  if (backend::cuda::visible_devices().count > 0) return;
  CHECK_THROWS_WITH_AS(backend::cuda::select_device(test::world()),
                       doctest::Contains("device cuda: no CUDA device is visible to this process"),
                       Error);
}

TEST_CASE("--device cuda in a program the host compiler built: one Error on every rank") {
  // (this test is compiled by g++: nvcc-compiled programs ask the runtime, tests/cli's
  // device_cuda checks train_gpt's answer without a GPU)
  CHECK_NOTHROW(check_device_flag(test::world(), "cpu"));
  CHECK_NOTHROW(check_device_flag(test::world(), "emulated"));
  CHECK_THROWS_WITH_AS(
      check_device_flag(test::world(), "cuda"),
      doctest::Contains("--device cuda: this program was compiled by the host compiler, not nvcc"),
      Error);
}
