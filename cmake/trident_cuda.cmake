# The CUDA/NCCL backend seam (include/trident/backend/). Off by default: the CPU backend
# (Eigen + MPI + OpenMP) is always present; TRIDENT_WITH_CUDA adds cuBLAS and NCCL.
if(TRIDENT_WITH_CUDA)
  find_package(CUDAToolkit REQUIRED)
  find_library(TRIDENT_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} REQUIRED)
  target_compile_definitions(trident INTERFACE TRIDENT_WITH_CUDA=1)
  target_link_libraries(trident INTERFACE CUDA::cudart CUDA::cublas ${TRIDENT_NCCL_LIBRARY})
endif()
