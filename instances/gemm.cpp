// instances/gemm.cpp: Eigen's GEMM (backend::eigen_gemm) in float and double, compiled once for
// trident's programs (the declarations: backend/cpu/gemm.hpp, docs/ARCHITECTURE.md §9).
#include <trident/backend/cpu/gemm.hpp>

template void trident::backend::eigen_gemm<float>(trident::StridedMap<float>,
                                                  const trident::CStridedMap<float>&,
                                                  const trident::CStridedMap<float>&, bool, bool,
                                                  float);
template void trident::backend::eigen_gemm<double>(trident::StridedMap<double>,
                                                   const trident::CStridedMap<double>&,
                                                   const trident::CStridedMap<double>&, bool, bool,
                                                   double);
