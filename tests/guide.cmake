# The "write a model" guide (docs/write_a_model.md), built and run from its own text: every
# ```cpp block after a line "<!-- file: NAME -->" is appended to NAME in the build tree (at
# configure time; editing the guide reconfigures), and its programs are built as a user builds
# them (trident::trident; CLI11 for the parity driver) and run:
#   guide.train           TP 2 x DP 2 on 4 ranks: the loss falls, TP bytes and one layer's
#                         activations equal the model's formulas
#   guide.parity.Nranks   the parity kit on every case N ranks allow (and the gradient checks)
# and the guide's model with a defect planted (tests/guide_defects.cpp) must be caught:
#   guide.contract        a Block that reads w in the W pass: the contract's message, status 1
#   guide.parity_fails    replicas that drift apart under TP: NO PARITY, status 1
#   guide.gradients_fail  a wrong input gradient: the finite differences say WRONG, status 1
set(guide_md ${PROJECT_SOURCE_DIR}/docs/write_a_model.md)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${guide_md})
file(READ ${guide_md} guide)
set(guide_dir ${CMAKE_CURRENT_BINARY_DIR}/guide)
set(guide_files "")
while(TRUE)
  string(FIND "${guide}" "<!-- file: " at)
  if(at EQUAL -1)
    break()
  endif()
  string(SUBSTRING "${guide}" ${at} -1 guide)
  string(REGEX MATCH "^<!-- file: ([^ ]+) -->\n```cpp\n" head "${guide}")
  if(NOT head)
    message(FATAL_ERROR "docs/write_a_model.md: a '<!-- file: NAME -->' line must be followed by a ```cpp block")
  endif()
  set(name ${CMAKE_MATCH_1})
  string(LENGTH "${head}" skip)
  string(SUBSTRING "${guide}" ${skip} -1 guide)
  string(FIND "${guide}" "\n```" end)
  string(SUBSTRING "${guide}" 0 ${end} block)
  string(SUBSTRING "${guide}" ${end} -1 guide)
  if(NOT name IN_LIST guide_files)
    list(APPEND guide_files ${name})
    set(guide_text_${name} "")
  endif()
  string(APPEND guide_text_${name} "${block}\n")
endwhile()
foreach(name IN ITEMS token_shift.hpp train.cpp parity.cpp trainer_instance.cpp)
  if(NOT name IN_LIST guide_files)
    message(FATAL_ERROR "docs/write_a_model.md has no block for ${name}")
  endif()
endforeach()
foreach(name IN LISTS guide_files)
  file(CONFIGURE OUTPUT ${guide_dir}/${name} CONTENT "${guide_text_${name}}" @ONLY)
endforeach()

foreach(program IN ITEMS train parity)
  add_executable(guide_${program} ${guide_dir}/${program}.cpp)
  if(program STREQUAL "train")  # the trainer compiled once, in its own unit (the guide's section 8)
    target_sources(guide_train PRIVATE ${guide_dir}/trainer_instance.cpp)
  endif()
  target_include_directories(guide_${program} PRIVATE ${guide_dir})
  target_link_libraries(guide_${program} PRIVATE trident_program_settings)
  trident_optimize(guide_${program} UNTIMED)
endforeach()
target_link_libraries(guide_parity PRIVATE CLI11::CLI11)
# The guide's model with a defect planted in its Block (tests/guide_defects.cpp).
add_executable(guide_defects ${CMAKE_CURRENT_SOURCE_DIR}/guide_defects.cpp)
target_include_directories(guide_defects PRIVATE ${guide_dir})
target_link_libraries(guide_defects PRIVATE trident_program_settings CLI11::CLI11)
trident_optimize(guide_defects UNTIMED)

function(guide_test name ranks)
  cmake_parse_arguments(G "" "" "COMMAND;EXPECT" ${ARGN})
  set(cmd ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ranks} ${G_COMMAND})
  string(REPLACE ";" "|" cmd "${cmd}")
  string(REPLACE ";" "|" expect "${G_EXPECT}")
  add_test(NAME guide.${name} COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${cmd}" "-DEXPECT=${expect}"
           -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_output.cmake)
  math(EXPR timeout "300 * ${TRIDENT_TEST_TIMEOUT_FACTOR}")
  set_tests_properties(guide.${name} PROPERTIES TIMEOUT ${timeout} PROCESSORS ${ranks}
                       ENVIRONMENT "OMP_NUM_THREADS=1")
endfunction()
guide_test(train 4 COMMAND $<TARGET_FILE:guide_train> EXPECT "step 0 loss 4.1" "step 59 loss 0.0"
           "0.079 / 0.079"  # TP measured / the kTpCollectives formula (GPT's would say 0.141)
           "measured 0.055 (MemoryStats), the model's formula 0.055")  # layer_activation_elements
# the guide quotes the 8-rank summary line; 2 ranks: the 12 two-rank cases
guide_test(parity.2ranks 2 COMMAND $<TARGET_FILE:guide_parity> --gradients
           EXPECT "11 passed, 0 failed, 1 refused" "sequence parallelism would put a token"
                  "gradients match central differences")
guide_test(parity.8ranks 8 COMMAND $<TARGET_FILE:guide_parity>
           EXPECT "17 passed, 0 failed, 2 refused" "): parity")
# guide_failure(name defect expect args...): the defective model fails with every |-line.
function(guide_failure name defect expect)
  set(cmd ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 $<TARGET_FILE:guide_defects> ${ARGN})
  string(REPLACE ";" "|" cmd "${cmd}")
  add_test(NAME guide.${name} COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${cmd}" "-DEXPECT=${expect}"
           -DFAILS=ON -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_output.cmake)
  set_tests_properties(guide.${name} PROPERTIES TIMEOUT 120 PROCESSORS 2
                       ENVIRONMENT "OMP_NUM_THREADS=1;GUIDE_DEFECT=${defect}")
endfunction()
guide_failure(contract reads-w-in-w
  "trident: model token-shift MLP: Block::backward read a null pointer in the W pass" --case
  "PP2 zb-h1")
guide_failure(parity_fails tp-rank-grad "TP2 |FAILED|NO PARITY" --case TP2)
guide_failure(gradients_fail dx-scale "WRONG|GRADIENTS DO NOT MATCH" --case TP2 --gradients)

# A model with a mistyped member: the first compile error is model/model.hpp's sentence.
add_executable(static_check_fixture EXCLUDE_FROM_ALL
               ${CMAKE_CURRENT_SOURCE_DIR}/static_check_fixture.cpp)
target_link_libraries(static_check_fixture PRIVATE trident_program_settings)
add_test(NAME model.static_checks
         COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DTARGET=static_check_fixture
                 "-DEXPECT=a Model needs ModelDescription describe() const"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/first_error.cmake)
set_tests_properties(model.static_checks PROPERTIES TIMEOUT 300)
