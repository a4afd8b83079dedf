# The CUDA/NCCL backend (include/trident/backend/cuda/). Off by default: the CPU backend
# (Eigen + MPI + OpenMP) is always present; TRIDENT_WITH_CUDA adds the CUDA language (nvcc, for
# the programs that launch kernels: backend::Cuda's launches are templates in .cuh headers),
# cudart, cuBLAS and NCCL. nvcc is looked up on PATH, then under /usr/local/cuda/bin (or pass
# -DCMAKE_CUDA_COMPILER=...). Target GPUs: CMAKE_CUDA_ARCHITECTURES, by default 90 (H100/H200).
if(TRIDENT_WITH_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(TRIDENT_NVCC nvcc HINTS /usr/local/cuda/bin)
    if(TRIDENT_NVCC)
      set(CMAKE_CUDA_COMPILER ${TRIDENT_NVCC})
    endif()
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  if(NOT CMAKE_CUDA_HOST_COMPILER)
    set(CMAKE_CUDA_HOST_COMPILER ${CMAKE_CXX_COMPILER})
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
  find_library(TRIDENT_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} REQUIRED)
  message(STATUS "trident: CUDA backend with ${CMAKE_CUDA_COMPILER} (CUDA ${CUDAToolkit_VERSION}), "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES}, NCCL ${TRIDENT_NCCL_LIBRARY}")
  target_compile_definitions(trident INTERFACE TRIDENT_WITH_CUDA=1)
  target_link_libraries(trident INTERFACE CUDA::cudart CUDA::cublas ${TRIDENT_NCCL_LIBRARY})
  # Host-device functions call constexpr host functions (std::numeric_limits, Eigen's).
  target_compile_options(trident INTERFACE
                         $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
endif()
