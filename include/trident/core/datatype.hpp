// trident/core/datatype.hpp: C++ type -> MPI datatype, and the sum operation for each type.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "bf16.hpp"

namespace trident {

template <class T>
struct mpi_traits;  // no MPI type for this C++ type

#define TRIDENT_MPI_TYPE(T, M)               \
  template <>                                \
  struct mpi_traits<T> {                     \
    static MPI_Datatype type() { return M; } \
  }
TRIDENT_MPI_TYPE(float, MPI_FLOAT);
TRIDENT_MPI_TYPE(double, MPI_DOUBLE);
TRIDENT_MPI_TYPE(char, MPI_CHAR);
TRIDENT_MPI_TYPE(unsigned char, MPI_UNSIGNED_CHAR);
TRIDENT_MPI_TYPE(std::int32_t, MPI_INT32_T);
TRIDENT_MPI_TYPE(std::int64_t, MPI_INT64_T);
TRIDENT_MPI_TYPE(std::uint64_t, MPI_UINT64_T);
TRIDENT_MPI_TYPE(bf16, MPI_UINT16_T);
#undef TRIDENT_MPI_TYPE

template <class T>
MPI_Datatype mpi_type() {
  return mpi_traits<T>::type();
}

enum class ReduceOp { sum, max, min };

namespace detail {
// Sum of bf16 values: widened to float, added, rounded back (MPI has no bf16 type).
inline void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const bf16* a = static_cast<const bf16*>(in);
  bf16* b = static_cast<bf16*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = bf16(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}
inline MPI_Op bf16_sum_op() {
  static MPI_Op op = [] {
    MPI_Op created;
    MPI_Op_create(&bf16_sum, /*commute=*/1, &created);
    return created;
  }();
  return op;
}
}  // namespace detail

template <class T>
MPI_Op mpi_op(ReduceOp op) {
  if constexpr (std::is_same_v<T, bf16>) {
    return detail::bf16_sum_op();  // only sums are defined on bf16
  } else {
    switch (op) {
      case ReduceOp::max:
        return MPI_MAX;
      case ReduceOp::min:
        return MPI_MIN;
      default:
        return MPI_SUM;
    }
  }
}

}  // namespace trident
