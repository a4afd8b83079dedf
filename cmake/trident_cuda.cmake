# The CUDA/NCCL backend (include/trident/backend/cuda/). Off by default: the CPU backend
# (Eigen + MPI + OpenMP) is always present; TRIDENT_WITH_CUDA adds the CUDA language (nvcc, for
# the programs that launch kernels: backend::Cuda's launches are templates in .cuh headers),
# cudart, cuBLAS and, when found, NCCL. nvcc is looked up on PATH, then under /usr/local/cuda/bin
# (or pass -DCMAKE_CUDA_COMPILER=...). Target GPUs: CMAKE_CUDA_ARCHITECTURES, by default 90
# (H100/H200).
# NCCL is optional (TRIDENT_NCCL: auto, ON or OFF; TRIDENT_NCCL_ROOT or $NCCL_HOME to look
# in): found, it defines TRIDENT_WITH_NCCL and ranks on distinct GPUs use it for every
# collective; without it the CUDA build stages every collective through the host (MPI) and says
# so here (backend/device_comm.hpp).
set(TRIDENT_NCCL auto CACHE STRING "NCCL for the CUDA backend's collectives: auto, ON or OFF")
set(TRIDENT_NCCL_ROOT "" CACHE PATH "Where NCCL is installed (include/nccl.h, lib/libnccl.so)")
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
  target_compile_definitions(trident INTERFACE TRIDENT_WITH_CUDA=1)
  target_link_libraries(trident INTERFACE CUDA::cudart CUDA::cublas)
  set(trident_nccl_note "NCCL off (TRIDENT_NCCL=OFF): collectives through host staging")
  if(NOT TRIDENT_NCCL STREQUAL "OFF")
    set(nccl_hints ${TRIDENT_NCCL_ROOT} $ENV{NCCL_HOME} ${CUDAToolkit_LIBRARY_ROOT}
                   ${CUDAToolkit_LIBRARY_DIR}/..)
    # (NAMES: also a bare libnccl.so.2, as the nvidia-nccl Python wheel ships it)
    find_library(TRIDENT_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${nccl_hints} PATH_SUFFIXES lib lib64
                 ${CMAKE_LIBRARY_ARCHITECTURE})
    find_path(TRIDENT_NCCL_INCLUDE nccl.h HINTS ${nccl_hints} ${CUDAToolkit_INCLUDE_DIRS}
              PATH_SUFFIXES include)
    if(TRIDENT_NCCL_LIBRARY AND TRIDENT_NCCL_INCLUDE)
      target_compile_definitions(trident INTERFACE TRIDENT_WITH_NCCL=1)
      target_include_directories(trident INTERFACE ${TRIDENT_NCCL_INCLUDE})
      target_link_libraries(trident INTERFACE ${TRIDENT_NCCL_LIBRARY})
      set(trident_nccl_note "NCCL ${TRIDENT_NCCL_LIBRARY}")
    elseif(TRIDENT_NCCL STREQUAL "ON")
      message(FATAL_ERROR "TRIDENT_NCCL=ON: NCCL not found (set TRIDENT_NCCL_ROOT or NCCL_HOME)")
    else()
      set(trident_nccl_note "NCCL not found: collectives through host staging (TRIDENT_NCCL_ROOT)")
    endif()
  endif()
  message(STATUS "trident: CUDA backend with ${CMAKE_CUDA_COMPILER} (CUDA ${CUDAToolkit_VERSION}), "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES}, ${trident_nccl_note}")
  # Host-device functions call constexpr host functions (std::numeric_limits, Eigen's).
  target_compile_options(trident INTERFACE
                         $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
endif()
