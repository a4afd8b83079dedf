# The test programs (one per area) and their rank counts.
trident_mpi_test(core RANKS 1 2 4 8 TIMEOUT 120 SOURCES test_comm.cpp test_comm_nodes.cpp test_mesh.cpp
                 test_watchdog.cpp)
trident_mpi_test(tensor RANKS 1 2 4 TIMEOUT 120 SOURCES test_tensor.cpp)
add_subdirectory(package)
trident_mpi_test(safetensors RANKS 1 TIMEOUT 120 SOURCES test_safetensors.cpp)
trident_mpi_test(pp_schedule RANKS 1 TIMEOUT 120 SOURCES test_pp_schedule.cpp test_pp_zb_h1.cpp
                 test_pp_zbv.cpp test_pp_timeline.cpp test_pp_grouped.cpp)
trident_mpi_test(inference RANKS 8 TIMEOUT 600 SOURCES test_inference.cpp)
trident_mpi_test(parity_tp RANKS 1 2 4 8 TIMEOUT 600 SOURCES test_parity_tp.cpp)
trident_mpi_test(plan RANKS 1 TIMEOUT 120 SOURCES test_plan.cpp)
trident_mpi_test(nn RANKS 1 TIMEOUT 300 SOURCES test_nn.cpp)
trident_mpi_test(nn_llama RANKS 1 TIMEOUT 300 SOURCES test_nn_llama.cpp)
trident_mpi_test(nn_moe RANKS 1 TIMEOUT 300 SOURCES test_nn_moe.cpp)
# Launches and kernel indices past 2^31 elements, on reserved (untouched) address space.
trident_mpi_test(sizes RANKS 1 TIMEOUT 120 SOURCES test_sizes.cpp)
trident_mpi_test(llama RANKS 2 8 TIMEOUT 600 SOURCES test_llama.cpp)
# A Llama-style mixture of experts (models/llama/moe_mlp.hpp) on the parity kit's meshes.
trident_mpi_test(llama_moe RANKS 2 8 TIMEOUT 600 SOURCES test_llama_moe.cpp)
trident_mpi_test(llama_weights RANKS 2 TIMEOUT 300 SOURCES test_llama_weights.cpp)
# The trainer on the emulated device (GPT-2 and Llama): in the llama bundle, which links both.
trident_mpi_test(emulated RANKS 1 2 4 8 TIMEOUT 900 SOURCES test_emulated.cpp)
# The same meshes with the emulated device's collectives on NCCL's semantics (mpi_nccl.hpp:
# untagged in-order point-to-point, rendezvous sends, groups), in double against the reference:
# GPipe, 1F1B and ZB-H1 move their pipeline messages in NCCL's groups, the others by staging.
foreach(n 2 4 8)
  add_test(NAME emulated_nccl.${n}ranks
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${n}
                   $<TARGET_FILE:test_bundle_llama> --source-file=*/test_emulated.cpp
                   "--test-case=*in double matches*,*Llama matches*")
  math(EXPR timeout "600 * ${TRIDENT_TEST_TIMEOUT_FACTOR}")
  set_tests_properties(emulated_nccl.${n}ranks PROPERTIES TIMEOUT ${timeout} PROCESSORS ${n}
                       ENVIRONMENT "OMP_NUM_THREADS=1;TRIDENT_EMULATED_COLLECTIVES=nccl")
endforeach()
# Context parallelism (ring attention) with GPT-2 and Llama, on the CPU and the emulated device;
# the emulated device's case again on NCCL's semantics (grouped, in-order ring shifts).
trident_mpi_test(context_parallel RANKS 2 4 8 TIMEOUT 600 SOURCES test_context_parallel.cpp)
add_test(NAME context_parallel_nccl.4ranks
         COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 4
                 $<TARGET_FILE:test_bundle_llama> --source-file=*/test_context_parallel.cpp
                 "--test-case=*emulated device*")
math(EXPR timeout "300 * ${TRIDENT_TEST_TIMEOUT_FACTOR}")
set_tests_properties(context_parallel_nccl.4ranks PROPERTIES TIMEOUT ${timeout} PROCESSORS 4
                     ENVIRONMENT "OMP_NUM_THREADS=1;TRIDENT_EMULATED_COLLECTIVES=nccl")
# Llama's trainers come compiled (models/llama/llama.hpp, cmake/trident_programs.cmake).
target_link_libraries(test_bundle_${trident_bundle_of_llama} PRIVATE trident_llama_instances)
trident_mpi_test(parity_pp RANKS 2 4 8 TIMEOUT 600 SOURCES test_parity_pp.cpp)
# Selective recomputation (--recompute selective) against none, bit for bit, and its activations.
trident_mpi_test(recompute RANKS 1 2 TIMEOUT 300 SOURCES test_recompute.cpp)
trident_mpi_test(parity_zero RANKS 2 4 8 TIMEOUT 600 SOURCES test_parity_zero.cpp)
trident_mpi_test(accounting RANKS 2 4 TIMEOUT 300 SOURCES test_accounting.cpp)
trident_mpi_test(model RANKS 1 TIMEOUT 300 SOURCES test_model.cpp)
trident_mpi_test(data RANKS 1 TIMEOUT 120 SOURCES test_data.cpp)
trident_mpi_test(weights RANKS 2 4 TIMEOUT 300 SOURCES test_weights.cpp)
trident_mpi_test(checkpoint RANKS 1 2 4 8 TIMEOUT 600 SOURCES test_checkpoint.cpp)
trident_mpi_test(checkpoint_fuzz RANKS 1 TIMEOUT 120 SOURCES test_checkpoint_fuzz.cpp)
include(cli/cli.cmake)
include(cli/llama.cmake)
include(tour/tour.cmake)
include(cli/inference.cmake)
trident_mpi_test(parity_precision RANKS 8 TIMEOUT 300 SOURCES test_parity_precision.cpp)
trident_mpi_test(tp_layers RANKS 2 4 TIMEOUT 300 SOURCES test_tp_layers.cpp)
trident_mpi_test(tp_layers_sharded RANKS 2 4 TIMEOUT 300 SOURCES test_tp_sharded.cpp)
# every layout of the planner run and measured: 150-300 s at 8 ranks on 2 cores, with the load
trident_mpi_test(plan_vs_trident RANKS 4 8 TIMEOUT 900 SOURCES test_plan_vs_trident.cpp)
include(cli/checkpoint.cmake)
# On 2 emulated nodes of 2 ranks (cmake/cluster.sh: needs root, as CI has; elsewhere the script
# exits 77 and the test is reported as skipped, with the reason in its output). Its source is in
# the gpt2 bundle (gpt2::Trainer<double> and the reference compiled once for both).
target_sources(test_bundle_gpt2 PRIVATE test_cluster.cpp)
add_test(NAME cluster.2nodes
         COMMAND sh ${PROJECT_SOURCE_DIR}/cmake/cluster.sh --nodes 2 --ranks-per-node 2
                 --link 1gbit --timeout 240 -- $<TARGET_FILE:test_bundle_gpt2>
                 --source-file=*/test_cluster.cpp --no-skip)
set_tests_properties(cluster.2nodes PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 PROCESSORS 4
                     FAIL_REGULAR_EXPRESSION "FAILED on some rank" ENVIRONMENT "OMP_NUM_THREADS=1")
# Leaving a run under cmake/cluster.sh: 10 runs of a small program on 2 nodes x 4 ranks over a
# shaped link, each must end with status 0 (tests/cluster_exit.cmake).
if(TRIDENT_BUILD_EXAMPLES)
  set(mesh_cmd sh ${PROJECT_SOURCE_DIR}/cmake/cluster.sh --nodes 2 --ranks-per-node 4
               --link 100mbit --timeout 60 -- $<TARGET_FILE:mesh> --tp 2 --pp 2 --dp 2)
  string(REPLACE ";" "|" mesh_cmd "${mesh_cmd}")
  add_test(NAME cluster.exit_status COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${mesh_cmd}" -DRUNS=10
                                            -P ${CMAKE_CURRENT_SOURCE_DIR}/cluster_exit.cmake)
  set_tests_properties(cluster.exit_status PROPERTIES TIMEOUT 400 PROCESSORS 8
                       SKIP_REGULAR_EXPRESSION "cannot emulate a cluster here")
endif()
# A check of the source tree (cmake/<script>) and <name>.catches, the same check on the fixture
# tree tests/<name>/, which passes only when its output says `catches` (what it must name).
function(trident_source_check name script catches)
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} -P
                                ${PROJECT_SOURCE_DIR}/cmake/${script})
  add_test(NAME ${name}.catches COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR}/tests/${name}
                                        -P ${PROJECT_SOURCE_DIR}/cmake/${script})
  set_tests_properties(${name}.catches PROPERTIES PASS_REGULAR_EXPRESSION "${catches}")
endfunction()
# The layering of include/trident (docs/ARCHITECTURE.md §4): no header includes a folder above
# its own. The fixture has three upward includes (a relative one, one from the include root, one
# in a .cuh).
trident_source_check(layering check_layers.cmake
  "reaches_up.cuh:3: #include \"../high/allowed.hpp\".*reaches_up.hpp:3: #include \"../high/allowed.hpp\".*'low' \\(layer 0\\) includes 'high' above it.*reaches_up_angle.hpp:3: #include[ \n]+<trident/high/allowed.hpp>.*3 include\\(s\\) break the layering")
# The rules of the code a compiler does not check (cmake/check_code_rules.cmake): no header
# outside zero/policy.hpp compares a ZeRO stage's number, none outside pp/schedule{,_traits}.hpp a
# schedule's kind, none chains statements with the comma operator. The fixture: two ZeRO lines
# (one each way round) next to a pipeline stage, a longer name, a comment and the policy's own
# header; two schedule lines (a comparison, a case) next to an assignment and the traits' own
# header; two comma chains next to a declaration, a call and a comment: the six, no more.
trident_source_check(code_rules check_code_rules.cmake
  "chained.hpp:5: c.tp = 2, c.pp = 4.*chained.hpp:6: n [+]= c.tp, [+][+]n.*rederives.hpp:4: if \\(c.zero < 3\\).*rederives.hpp:5: if \\(1 == c.policy.stage\\).*schedule_facts.hpp:4: if \\(o.schedule ==[ \n]+pp::ScheduleKind::zbv\\).*schedule_facts.hpp:5: switch.*ScheduleKind::gpipe.*6 line\\(s\\) break a rule")
# Every file a comment or a document names exists (cmake/check_file_names.cmake); the fixture
# names one file that is there and one that is not.
trident_source_check(file_names check_file_names.cmake
  "docs/notes\\.md: names zero/renamed_store\\.hpp,.*1 name\\(s\\) of files")
# No function over 60 lines (docs/ARCHITECTURE.md: small functions; the listed exceptions carry
# their reason in cmake/check_function_length.cmake); the fixture has one 83-line function.
trident_source_check(function_length check_function_length.cmake
  "include/too_long.hpp:7: too_long\\(\\) is 83 lines, over 60")
add_subdirectory(cuda)

include(guide.cmake)
