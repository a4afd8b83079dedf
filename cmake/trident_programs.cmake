# Build settings of trident's own tests, examples and benchmarks (not exported to users).
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)

add_library(trident_program_settings INTERFACE)
target_link_libraries(trident_program_settings INTERFACE trident::trident
                      nlohmann_json::nlohmann_json)
target_compile_options(trident_program_settings INTERFACE -Wall -Wextra -Wpedantic
                       $<$<CONFIG:Release>:-O3 -march=native>)

# TRIDENT_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer on every test, example and
# benchmark (not on users of the library). Any undefined behaviour stops the program
# (-fno-sanitize-recover), so a test fails instead of printing and passing.
if(TRIDENT_SANITIZE)
  set(trident_sanitizers -fsanitize=address,undefined -fno-sanitize-recover=all
                         -fno-omit-frame-pointer)
  target_compile_options(trident_program_settings INTERFACE ${trident_sanitizers})
  target_link_options(trident_program_settings INTERFACE ${trident_sanitizers})
endif()

# Code compiled once for every program instead of once in each (docs/ARCHITECTURE.md §9),
# internal (the installed library stays header-only): trident_cli, io/cli.hpp's definitions on
# CLI11 (the programs do not see CLI11's headers); trident_instances, the templates the programs
# declare `extern template` under TRIDENT_PREBUILT_INSTANCES (GPT-2's trainers,
# models/gpt2/trainer.hpp; Eigen's GEMM, backend/cpu/gemm.hpp), one source per element type so
# that they compile in parallel.
add_library(trident_cli STATIC ${PROJECT_SOURCE_DIR}/instances/cli.cpp)
target_link_libraries(trident_cli PRIVATE trident_program_settings CLI11::CLI11)
add_library(trident_instances STATIC ${PROJECT_SOURCE_DIR}/instances/gpt2_float.cpp
            ${PROJECT_SOURCE_DIR}/instances/gpt2_double.cpp
            ${PROJECT_SOURCE_DIR}/instances/gpt2_bf16.cpp ${PROJECT_SOURCE_DIR}/instances/gemm.cpp)
target_link_libraries(trident_instances PRIVATE trident_program_settings)
target_compile_definitions(trident_instances PRIVATE TRIDENT_PREBUILT_INSTANCES)

add_library(trident_programs INTERFACE)
target_link_libraries(trident_programs INTERFACE trident_program_settings trident_cli
                      trident_instances)
target_compile_definitions(trident_programs INTERFACE TRIDENT_PREBUILT_INSTANCES)

# trident_program(name source...): an executable built with the settings above.
function(trident_program name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE trident_programs)
endfunction()
