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

# The training programs on a GPU (label gpu; compiled by nvcc: examples/CMakeLists.txt): the
# same per-step losses in double as the single-process CPU run, within 1e-10 — GPT-2 on one
# rank; at TP2, PP2 1F1B, DP2 ZeRO-3, TP2-PP2 and PP2 ZB-V x DP2 ZeRO-3 with the ranks sharing
# the GPU (host staging); Llama on one rank.
if(TRIDENT_BUILD_EXAMPLES)
  list(APPEND trident_cuda_test_targets train_gpt train_llama compare_losses)
  # trident_gpu_same_losses(name PROGRAM p RANKS n ARGS gpu-run flags...)
  function(trident_gpu_same_losses name)
    cmake_parse_arguments(G "" "PROGRAM;RANKS" "ARGS" ${ARGN})
    set(dir ${CMAKE_CURRENT_BINARY_DIR}/gpu_same_losses)
    file(MAKE_DIRECTORY ${dir})
    set(common --dtype double --steps 4 --layers 4 --hidden 32 --heads 4 --seq 16 --batch 8
        --data synthetic --log-every 1)
    set(cpu ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1 $<TARGET_FILE:${G_PROGRAM}> ${common}
        --json ${dir}/${name}.cpu.json)
    set(gpu ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${G_RANKS} $<TARGET_FILE:${G_PROGRAM}>
        ${common} ${G_ARGS} --device cuda --json ${dir}/${name}.gpu.json)
    set(cmp $<TARGET_FILE:compare_losses> ${dir}/${name}.cpu.json ${dir}/${name}.gpu.json 1e-10)
    foreach(v cpu gpu cmp)
      string(REPLACE ";" "|" ${v} "${${v}}")
    endforeach()
    add_test(NAME cuda_cli.${name} COMMAND ${CMAKE_COMMAND} "-DFIRST=${cpu}" "-DSECOND=${gpu}"
             "-DCOMPARE=${cmp}" -P ${CMAKE_CURRENT_SOURCE_DIR}/gpu_same_losses.cmake)
    set_tests_properties(cuda_cli.${name} PROPERTIES LABELS "cuda;gpu" TIMEOUT 300
                         SKIP_REGULAR_EXPRESSION "SKIPPED: no GPU" ENVIRONMENT "OMP_NUM_THREADS=1")
  endfunction()
  trident_gpu_same_losses(gpt2 PROGRAM train_gpt RANKS 1)
  trident_gpu_same_losses(gpt2_tp2_shared_gpu PROGRAM train_gpt RANKS 2 ARGS --tp 2)
  trident_gpu_same_losses(gpt2_pp2_1f1b PROGRAM train_gpt RANKS 2 ARGS --pp 2 --schedule 1f1b
                          --microbatches 4)
  trident_gpu_same_losses(gpt2_dp2_zero3 PROGRAM train_gpt RANKS 2 ARGS --dp 2 --zero 3)
  trident_gpu_same_losses(gpt2_tp2_pp2 PROGRAM train_gpt RANKS 4 ARGS --tp 2 --pp 2)
  trident_gpu_same_losses(gpt2_pp2_zbv_dp2_zero3 PROGRAM train_gpt RANKS 4 ARGS --pp 2 --dp 2
                          --zero 3 --schedule zbv --microbatches 2)
  trident_gpu_same_losses(llama PROGRAM train_llama RANKS 1 ARGS --kv-heads 2)
endif()
