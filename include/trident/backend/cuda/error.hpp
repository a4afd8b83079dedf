// trident/backend/cuda/error.hpp: CUDA runtime and cuBLAS status codes as trident::Error.
//
// Every call into the CUDA runtime or cuBLAS goes through check_cuda / check_cublas: a failure
// becomes one Error naming the call, the error's name and text (cudaGetErrorName/String).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "../../core/error.hpp"

namespace trident::backend::cuda {

inline std::string describe(cudaError_t code) {
  return std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code);
}

inline void check_cuda(cudaError_t code, const char* call) {
  if (code != cudaSuccess) throw Error(std::string("CUDA: ") + call + " failed: " + describe(code));
}

inline void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLAS: ") + call + " failed: status " + std::to_string(int(status)));
}

}  // namespace trident::backend::cuda
