# Build settings of trident's own tests, examples and benchmarks (not exported to users).
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)

add_library(trident_programs INTERFACE)
target_link_libraries(trident_programs INTERFACE trident::trident CLI11::CLI11
                      nlohmann_json::nlohmann_json)
target_compile_options(trident_programs INTERFACE -Wall -Wextra -Wpedantic
                       $<$<CONFIG:Release>:-O3 -march=native>)

# TRIDENT_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer on every test, example and
# benchmark (not on users of the library). Any undefined behaviour stops the program
# (-fno-sanitize-recover), so a test fails instead of printing and passing.
if(TRIDENT_SANITIZE)
  set(trident_sanitizers -fsanitize=address,undefined -fno-sanitize-recover=all
                         -fno-omit-frame-pointer)
  target_compile_options(trident_programs INTERFACE ${trident_sanitizers})
  target_link_options(trident_programs INTERFACE ${trident_sanitizers})
endif()

# trident_program(name source...): an executable built with the settings above.
function(trident_program name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE trident_programs)
endfunction()
