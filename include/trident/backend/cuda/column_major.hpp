// trident/backend/cuda/column_major.hpp: a row-major GEMM as the column-major call cuBLAS takes.
//
// A row-major (M, N) matrix with rows ldc apart is, read column-major, its transpose (N, M)
// with leading dimension ldc. So C = op(A) op(B) (row-major) is C^T = op(B)^T op(A)^T
// (column-major): cuBLAS gets B first, then A, with the same transpose flags, m = N, n = M,
// and the same leading dimensions. Plain arithmetic: tested on the host against backend::gemm.
#pragma once

#include <algorithm>

namespace trident::backend::cuda {

// The first operand is B, the second A.
struct ColumnMajorGemm {
  bool trans_first, trans_second;  // op of the first and second operand
  int m, n, k;                     // the column-major C is (m, n), the inner dimension k
  int ld_first, ld_second, ldc;
};

// C: (M, N) = op(A) op(B) + beta C, row-major with rows lda, ldb, ldc apart.
inline ColumnMajorGemm column_major(bool trans_a, bool trans_b, int M, int N, int K, int lda,
                                    int ldb, int ldc) {
  // A leading dimension must be >= 1 even for an empty operand (cuBLAS checks it).
  return {trans_b, trans_a, N, M, K, std::max(ldb, 1), std::max(lda, 1), std::max(ldc, 1)};
}

}  // namespace trident::backend::cuda
