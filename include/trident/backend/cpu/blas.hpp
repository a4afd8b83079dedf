// trident/backend/cpu/blas.hpp: the BLAS library linked at configure time (TRIDENT_BLAS, see
// cmake/trident_blas.cmake): OpenBLAS or BLIS through their cblas interface, or none (Eigen's own
// GEMM). backend::gemm calls it for float and double; every other type stays on Eigen.
//
// Threads: a BLAS library runs its own thread pool (OpenBLAS pthread or OpenMP, BLIS OpenMP);
// configure_threads (threads.hpp) gives it the rank's thread count, one per rank when the
// ranks fill the cores.
#pragma once

#include <algorithm>
#include <type_traits>

#if defined(TRIDENT_BLAS_OPENBLAS)
#include <cblas.h>  // OpenBLAS's own, with openblas_set_num_threads
#elif defined(TRIDENT_BLAS_BLIS)
#include <blis.h>  // BLIS with its cblas layer
#endif

namespace trident::backend::blas {

#if defined(TRIDENT_BLAS_OPENBLAS)
inline constexpr const char* kName = "openblas";
#elif defined(TRIDENT_BLAS_BLIS)
inline constexpr const char* kName = "blis";
#else
inline constexpr const char* kName = "eigen";
#endif

#if defined(TRIDENT_BLAS_OPENBLAS) || defined(TRIDENT_BLAS_BLIS)
inline constexpr bool kLinked = true;
#else
inline constexpr bool kLinked = false;
#endif
// Whether C = op(A) op(B) for elements of type T goes to the linked BLAS.
template <class T>
inline constexpr bool kHas = kLinked && (std::is_same_v<T, float> || std::is_same_v<T, double>);

// The threads the BLAS library uses for one call (1 when none is linked).
inline int threads() {
#if defined(TRIDENT_BLAS_OPENBLAS)
  return openblas_get_num_threads();
#elif defined(TRIDENT_BLAS_BLIS)
  return static_cast<int>(bli_thread_get_num_threads());
#else
  return 1;
#endif
}

inline void set_threads([[maybe_unused]] int n) {
#if defined(TRIDENT_BLAS_OPENBLAS)
  openblas_set_num_threads(n);
#elif defined(TRIDENT_BLAS_BLIS)
  bli_thread_set_num_threads(n);
#endif
}

// C: (M, N) = op(A) op(B) + beta C, row-major, rows of A, B, C lda, ldb, ldc elements apart;
// M, N > 0 (a BLAS rejects leading dimensions below 1). Only for kHas<T>.
template <class T>
void gemm([[maybe_unused]] bool trans_a, [[maybe_unused]] bool trans_b, [[maybe_unused]] int M,
          [[maybe_unused]] int N, [[maybe_unused]] int K, [[maybe_unused]] const T* A,
          [[maybe_unused]] int lda, [[maybe_unused]] const T* B, [[maybe_unused]] int ldb,
          [[maybe_unused]] T beta, [[maybe_unused]] T* C, [[maybe_unused]] int ldc) {
  static_assert(kHas<T>, "blas::gemm: no BLAS for this type");
#if defined(TRIDENT_BLAS_OPENBLAS) || defined(TRIDENT_BLAS_BLIS)
  const auto ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, A, std::max(lda, 1), B, std::max(ldb, 1),
                beta, C, ldc);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0, A, std::max(lda, 1), B, std::max(ldb, 1), beta,
                C, ldc);
#endif
}

}  // namespace trident::backend::blas
