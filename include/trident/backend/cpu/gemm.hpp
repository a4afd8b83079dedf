// trident/backend/cpu/gemm.hpp: the one matrix product every kernel of nn/ goes through.
//
// C = op(A) op(B) + beta C on row-major views (Eigen maps with a row stride, so that one head's
// columns inside a fused QKV matrix are a view, not a copy). This is the seam between the math
// and the hardware: the CPU backend runs the BLAS linked at configure time (blas.hpp: OpenBLAS or
// BLIS, through cblas with the views' row strides as leading dimensions) for float and double,
// and Eigen's GEMM otherwise (OpenMP threads when not already inside a parallel region); a CUDA
// backend replaces this function with cuBLAS.
#pragma once

#include <cassert>
#include <type_traits>

#ifdef _OPENMP
#include <omp.h>
#endif
#include "../../core/matrix.hpp"
#include "blas.hpp"

namespace trident::backend {

// A (rows, cols) row-major view of `data` whose rows are `stride` elements apart.
template <class T>
StridedMap<T> view(T* data, Eigen::Index rows, Eigen::Index cols, Eigen::Index stride) {
  return StridedMap<T>(data, rows, cols, Eigen::OuterStride<>(stride));
}
template <class T>
StridedMap<T> view(T* data, Eigen::Index rows, Eigen::Index cols) {
  return view(data, rows, cols, cols);
}
template <class T>
CStridedMap<T> cview(const T* data, Eigen::Index rows, Eigen::Index cols, Eigen::Index stride) {
  return CStridedMap<T>(data, rows, cols, Eigen::OuterStride<>(stride));
}
template <class T>
CStridedMap<T> cview(const T* data, Eigen::Index rows, Eigen::Index cols) {
  return cview(data, rows, cols, cols);
}

// The same product by Eigen's own GEMM (OpenMP threads when not inside a parallel region): the
// fallback of gemm() below, and the Eigen baseline of the benchmarks (bench/plain_gemms.hpp).
template <class T>
void eigen_gemm(StridedMap<T> C, const CStridedMap<T>& A, const CStridedMap<T>& B, bool trans_a,
                bool trans_b, std::common_type_t<T> beta) {
  const auto product = [&](const auto& a, const auto& b) {
    if (beta == T(0)) {
      C.noalias() = a * b;
    } else {
      if (beta != T(1)) C *= beta;
      C.noalias() += a * b;
    }
  };
  if (!trans_a && !trans_b) product(A, B);
  if (!trans_a && trans_b) product(A, B.transpose());
  if (trans_a && !trans_b) product(A.transpose(), B);
  if (trans_a && trans_b) product(A.transpose(), B.transpose());
}

// C: (M, N) = op(A): (M, K) op(B): (K, N) + beta C, where op(X) is X or X^T.
// beta 0 overwrites C (whatever it held, NaN included); beta 1 accumulates.
// C must not overlap A or B (the product is evaluated straight into C).
template <class T>
void gemm(StridedMap<T> C, const CStridedMap<T>& A, const CStridedMap<T>& B, bool trans_a,
          bool trans_b, std::common_type_t<T> beta) {
  assert((trans_a ? A.cols() : A.rows()) == C.rows() && "gemm: rows of op(A) != rows of C");
  assert((trans_b ? B.rows() : B.cols()) == C.cols() && "gemm: cols of op(B) != cols of C");
  assert((trans_a ? A.rows() : A.cols()) == (trans_b ? B.cols() : B.rows()) &&
         "gemm: inner dimensions of op(A) and op(B) differ");
  if constexpr (blas::kHas<T>) {
    // A BLAS with a pool of threads is not called from inside a parallel region (its threads
    // would compete with the region's); with one thread it is called from anywhere.
    bool in_parallel = false;
#ifdef _OPENMP
    in_parallel = omp_in_parallel();
#endif
    if (!in_parallel || blas::threads() == 1) {
      if (C.rows() == 0 || C.cols() == 0) return;
      blas::gemm<T>(trans_a, trans_b, int(C.rows()), int(C.cols()),
                    int(trans_a ? A.rows() : A.cols()), A.data(), int(A.outerStride()), B.data(),
                    int(B.outerStride()), beta, C.data(), int(C.outerStride()));
      return;
    }
  }
  eigen_gemm<T>(C, A, B, trans_a, trans_b, beta);
}

}  // namespace trident::backend

// Eigen's GEMM is the largest template a program instantiates: trident's own programs compile it
// once (instances/gemm.cpp; TRIDENT_PREBUILT_INSTANCES, docs/BUILD.md). A user's program
// instantiates it itself.
#define TRIDENT_EIGEN_GEMM_INSTANCE(T)                                          \
  template void trident::backend::eigen_gemm<T>(trident::StridedMap<T>,         \
                                                const trident::CStridedMap<T>&, \
                                                const trident::CStridedMap<T>&, bool, bool, T)
#ifdef TRIDENT_PREBUILT_INSTANCES
extern TRIDENT_EIGEN_GEMM_INSTANCE(float);
extern TRIDENT_EIGEN_GEMM_INSTANCE(double);
#endif
