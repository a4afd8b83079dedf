// trident/backend/cuda/gemm.hpp: backend::gemm's contract on a GPU, through cuBLAS.
//
// C: (M, N) = op(A) op(B) + beta C on row-major strided device matrices, mapped onto cuBLAS's
// column-major call by column_major.hpp. float goes through cublasSgemm with the default math
// mode (no TF32: the same float products as the CPU's, for parity), double through cublasDgemm.
// One cuBLAS handle per process, on the default stream (every kernel of the backend runs in
// stream order).
#pragma once

#include <cublas_v2.h>

#include <type_traits>

#include "column_major.hpp"
#include "error.hpp"
#include "stream.hpp"

namespace trident::backend::cuda {

inline cublasHandle_t cublas_handle() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    check_cublas(cublasCreate(&h), "cublasCreate");
    check_cublas(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    check_cublas(cublasSetStream(h, stream()), "cublasSetStream");
    return h;
  }();
  return handle;
}

template <class T>
void gemm(bool trans_a, bool trans_b, int M, int N, int K, const T* A, int lda, const T* B, int ldb,
          T beta, T* C, int ldc) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "cuda::gemm: float or double");
  if (M == 0 || N == 0) return;
  const ColumnMajorGemm g = column_major(trans_a, trans_b, M, N, K, lda, ldb, ldc);
  const auto op = [](bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; };
  const T one = 1;
  if constexpr (std::is_same_v<T, float>)
    check_cublas(cublasSgemm(cublas_handle(), op(g.trans_first), op(g.trans_second), g.m, g.n, g.k,
                             &one, B, g.ld_first, A, g.ld_second, &beta, C, g.ldc),
                 "cublasSgemm");
  else
    check_cublas(cublasDgemm(cublas_handle(), op(g.trans_first), op(g.trans_second), g.m, g.n, g.k,
                             &one, B, g.ld_first, A, g.ld_second, &beta, C, g.ldc),
                 "cublasDgemm");
}

}  // namespace trident::backend::cuda
