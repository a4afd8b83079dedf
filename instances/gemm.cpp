// instances/gemm.cpp: Eigen's GEMM (backend::eigen_gemm) in float and double, compiled once for
// trident's programs (the declarations: backend/cpu/gemm.hpp, docs/BUILD.md).
#include <trident/backend/cpu/gemm.hpp>

TRIDENT_EIGEN_GEMM_INSTANCE(float);
TRIDENT_EIGEN_GEMM_INSTANCE(double);
