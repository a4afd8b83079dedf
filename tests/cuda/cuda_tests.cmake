# The tests of the CUDA build (TRIDENT_WITH_CUDA), included by tests/cuda/CMakeLists.txt.
trident_mpi_test(cuda_host RANKS 1 2 TIMEOUT 120 SOURCES test_cuda_host.cpp)
set_tests_properties(cuda_host.1ranks cuda_host.2ranks PROPERTIES LABELS cuda)
list(APPEND trident_cuda_test_targets test_cuda_host)

# Compiled by nvcc; not trident_programs (its -march=native and -W flags are g++'s).
add_executable(test_cuda_gpu test_layers_gpu.cu gpu_main.cpp)
target_link_libraries(test_cuda_gpu PRIVATE trident doctest::doctest)
add_test(NAME cuda_gpu COMMAND test_cuda_gpu)
set_tests_properties(cuda_gpu PROPERTIES LABELS "cuda;gpu" SKIP_RETURN_CODE 77 TIMEOUT 300)
list(APPEND trident_cuda_test_targets test_cuda_gpu)

# GPT-2 and Llama trained on one GPU against the CPU (tests/parity.hpp, model_parity.hpp); label `gpu`.
add_executable(test_cuda_model_gpu test_model_gpu.cu gpu_main.cpp)
target_link_libraries(test_cuda_model_gpu PRIVATE trident doctest::doctest)
add_test(NAME cuda_model_gpu COMMAND test_cuda_model_gpu)
set_tests_properties(cuda_model_gpu PROPERTIES LABELS "cuda;gpu" SKIP_RETURN_CODE 77 TIMEOUT 300)
list(APPEND trident_cuda_test_targets test_cuda_model_gpu)
