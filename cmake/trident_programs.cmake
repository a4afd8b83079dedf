# Build settings of trident's own tests, examples and benchmarks (not exported to users).
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)

add_library(trident_program_settings INTERFACE)
target_link_libraries(trident_program_settings INTERFACE trident::trident
                      nlohmann_json::nlohmann_json)
target_compile_options(trident_program_settings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic $<$<CONFIG:Release>:-march=native>>
  # a CUDA build's programs compiled by nvcc (examples/CMakeLists.txt): the host compiler's flags
  $<$<COMPILE_LANGUAGE:CUDA>:$<$<CONFIG:Release>:-Xcompiler=-march=native> -Xcompiler=-fopenmp>)

# How hard GCC optimises each target's own code in Release (docs/BUILD.md). A 2-core
# build is bound by the CPU seconds of its compiles, three quarters of them GCC's optimiser.
# TIMED (-O3): code that is timed or trains, and every object of a program that times anything:
# the instances (the training step with its kernels, Eigen's GEMM), the benchmarks, the examples
# that train or measure. (An inline function that a program's object shares with the instances,
# a collective or a buffer, is linked from the first object that defines it: the program's own.)
# UNTIMED (-O1): the tests (references and checks; the steps they check are the instances'), the
# examples that time nothing, CLI11's parser.
set(TRIDENT_TIMED_OPTIMIZATION -O3 CACHE STRING "Release optimisation of timed code")
set(TRIDENT_UNTIMED_OPTIMIZATION -O1 CACHE STRING "Release optimisation of the rest")
# trident_optimize(target TIMED|UNTIMED)
function(trident_optimize target kind)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:${TRIDENT_${kind}_OPTIMIZATION}>)
endfunction()

# TRIDENT_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer on every test, example and
# benchmark (not on users of the library). Any undefined behaviour stops the program
# (-fno-sanitize-recover), so a test fails instead of printing and passing.
if(TRIDENT_SANITIZE)
  set(trident_sanitizers -fsanitize=address,undefined -fno-sanitize-recover=all
                         -fno-omit-frame-pointer)
  target_compile_options(trident_program_settings INTERFACE ${trident_sanitizers})
  target_link_options(trident_program_settings INTERFACE ${trident_sanitizers})
endif()

# Code compiled once for every program instead of once in each (docs/BUILD.md),
# internal (the installed library stays header-only): trident_cli, io/cli.hpp's definitions on
# CLI11 (the programs do not see CLI11's headers); trident_instances, the templates the programs
# declare `extern template` under TRIDENT_PREBUILT_INSTANCES (GPT-2's trainers, one source per
# backend, train/prebuilt.hpp; Eigen's GEMM, backend/cpu/gemm.hpp).
add_library(trident_cli STATIC ${PROJECT_SOURCE_DIR}/instances/cli.cpp)
target_link_libraries(trident_cli PRIVATE trident_program_settings CLI11::CLI11)
trident_optimize(trident_cli UNTIMED)
add_library(trident_instances STATIC ${PROJECT_SOURCE_DIR}/instances/gpt2.cpp
            ${PROJECT_SOURCE_DIR}/instances/gpt2_emulated.cpp ${PROJECT_SOURCE_DIR}/instances/gemm.cpp)
# Llama's trainers, in a library of their own: linked by the two programs that train Llama
# (train_llama, the llama tests), not compiled for the CUDA build's tests.
add_library(trident_llama_instances STATIC ${PROJECT_SOURCE_DIR}/instances/llama.cpp
            ${PROJECT_SOURCE_DIR}/instances/llama_emulated.cpp)
foreach(instances trident_instances trident_llama_instances)
  target_link_libraries(${instances} PRIVATE trident_program_settings)
  trident_optimize(${instances} TIMED)
  target_compile_definitions(${instances} PRIVATE TRIDENT_PREBUILT_INSTANCES)
endforeach()

add_library(trident_programs INTERFACE)
target_link_libraries(trident_programs INTERFACE trident_program_settings trident_cli
                      trident_instances)
target_compile_definitions(trident_programs INTERFACE TRIDENT_PREBUILT_INSTANCES)

# trident_program(name [UNTIMED] source...): an executable built with the settings above, its
# own code optimised as timed code unless UNTIMED.
function(trident_program name)
  cmake_parse_arguments(P "UNTIMED" "" "" ${ARGN})
  add_executable(${name} ${P_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE trident_programs)
  set(kind TIMED)
  if(P_UNTIMED)
    set(kind UNTIMED)
  endif()
  trident_optimize(${name} ${kind})
endfunction()
