# The tour's figures are the programs' figures (examples/README.md, "no stale figure"): each
# figure below is quoted by the tour and printed by the command the tour runs (shortened where
# the figure does not depend on it: the report's bytes and memory do not depend on the steps).
# Timings are not checked: the tour quotes them as ranges with the machine and its load.
if(NOT TRIDENT_BUILD_EXAMPLES)
  return()
endif()
# CLUSTER: on 2 emulated nodes of RANKS/2 ranks over a 100 Mbit/s link (cmake/cluster.sh; as
# root, as CI runs; elsewhere the test is reported as skipped). DOC: the page that quotes the
# figures, examples/README.md unless given.
function(tour_figures name)
  cmake_parse_arguments(T "CLUSTER" "RANKS;TIMEOUT;DOC" "COMMAND;FIGURES" ${ARGN})
  math(EXPR timeout "${T_TIMEOUT} * ${TRIDENT_TEST_TIMEOUT_FACTOR}")
  if(T_CLUSTER)
    math(EXPR per_node "${T_RANKS} / 2")
    math(EXPR inner "${timeout} - 30")  # the script's own limit ends it first, with its message
    set(cmd sh ${PROJECT_SOURCE_DIR}/cmake/cluster.sh --nodes 2 --ranks-per-node ${per_node}
            --link 100mbit --timeout ${inner} -- ${T_COMMAND})
  else()
    set(cmd ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${T_RANKS} ${T_COMMAND})
  endif()
  if(NOT T_DOC)
    set(T_DOC README.md)
  endif()
  string(REPLACE ";" "|" cmd "${cmd}")
  string(REPLACE ";" "|" figures "${T_FIGURES}")
  add_test(NAME tour.${name} COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${cmd}" "-DFIGURES=${figures}"
           -DDOC=${PROJECT_SOURCE_DIR}/examples/${T_DOC}
           -P ${CMAKE_CURRENT_SOURCE_DIR}/tour/check_figures.cmake)
  set_tests_properties(tour.${name} PROPERTIES TIMEOUT ${timeout} PROCESSORS ${T_RANKS}
                       ENVIRONMENT "OMP_NUM_THREADS=1"
                       SKIP_REGULAR_EXPRESSION "cannot emulate a cluster here")
endfunction()

# §1, the flagship's report (the GPL text, as the tour runs it)
tour_figures(flagship RANKS 8 TIMEOUT 300
  COMMAND $<TARGET_FILE:train_gpt> --tp 2 --pp 2 --dp 2 --zero 1 --schedule 1f1b --steps 3
  FIGURES "834304 parameters" "4Ψ + 4Ψ + 8Ψ/Nd" "Ψ = 223,616 on ranks 0-3 -> 2.559 MiB"
          "1.706" "0.853" "(p-1)/(m+p-1) = 1/5 = 0.200")
# §5 and §11: zero_vs_3d's memory, bytes, GPT-3 figures and the answer's deterministic columns
tour_figures(zero_vs_3d RANKS 8 TIMEOUT 900
  COMMAND $<TARGET_FILE:zero_vs_3d> --steps 1 --svg-dir ${CMAKE_CURRENT_BINARY_DIR}
          --html ${CMAKE_CURRENT_BINARY_DIR}/zero_vs_3d.html
  FIGURES "14.1 MiB" "against 29.0" "44.5 MiB" "27.0" "88.6 MiB" "2.2x the" "41.1"
          "2098 GB per GPU per step" "115 s against 38 s" "477 GB per GPU per step"
          "ZeRO-3 DP8 MiB 14.1 44.5 58.6 88.6"
          "ZeRO-3 DP1024 GB 2.7 6.7 9.4 2097.8 867.8 115.21"
          "TP8-PP16-DP8 ZeRO-1 best 3D GB 8.0 5.2 13.2 495.5 29.0 38.17"
          "ZeRO-3 computes 6769 FLOP per byte"
          "tallest: TP4-DP2 ZeRO-1 (rank 0), 97.7 MiB: activations 70.1 (72%)"
          "2 nodes x 4 ranks, 100 Mbit/s: 37.02 MiB, the best 3D layout's 28% of it"
          "GPT-3 175B, 1024 A100s: 2096 GB, the best 3D layout's 40% of it")
# zero_vs_3d's page (--html, io/html_report.hpp) from the run above, opened in headless Chromium
# (tests/cli/html_report.cmake): no console message, each run's step time plotted as measured
# and its prediction as the marker (tests/cli/check_html.cpp).
set_tests_properties(tour.zero_vs_3d PROPERTIES FIXTURES_SETUP zero_vs_3d_page)
add_test(NAME tour.zero_vs_3d_html COMMAND ${CMAKE_COMMAND}
         -DPAGE=${CMAKE_CURRENT_BINARY_DIR}/zero_vs_3d.html -DCHECK=$<TARGET_FILE:check_html>
         -P ${PROJECT_SOURCE_DIR}/tests/cli/html_report.cmake)
set_tests_properties(tour.zero_vs_3d_html PROPERTIES TIMEOUT 180 FIXTURES_REQUIRED zero_vs_3d_page
                     SKIP_REGULAR_EXPRESSION "SKIPPED: ")
# §6 in its quick mode, on the emulated cluster: it ends with status 0 (the teardown once turned
# correct runs into 9) and prints the predicted bytes cluster.md quotes (the cost model's, the
# same in both modes for ZeRO-3: its bytes are the parameters'), and the DGX A100 ratio
tour_figures(zero_vs_3d_cluster_quick RANKS 8 TIMEOUT 400 CLUSTER DOC cluster.md
  COMMAND $<TARGET_FILE:zero_vs_3d_cluster> --quick
          --html ${CMAKE_CURRENT_BINARY_DIR}/zero_vs_3d_cluster.html
  FIGURES "110.69" "= 7488 FLOP/byte")
# its page, as zero_vs_3d's: step times next to their predictions, bytes over the link next to
# the formula (skipped with the cluster)
set_tests_properties(tour.zero_vs_3d_cluster_quick PROPERTIES FIXTURES_SETUP cluster_page)
add_test(NAME tour.zero_vs_3d_cluster_html COMMAND ${CMAKE_COMMAND}
         -DPAGE=${CMAKE_CURRENT_BINARY_DIR}/zero_vs_3d_cluster.html -DCHECK=$<TARGET_FILE:check_html>
         -P ${PROJECT_SOURCE_DIR}/tests/cli/html_report.cmake)
set_tests_properties(tour.zero_vs_3d_cluster_html PROPERTIES TIMEOUT 180
                     FIXTURES_REQUIRED cluster_page SKIP_REGULAR_EXPRESSION "SKIPPED: ")
# §8's mixture of experts: its first step's load-balancing loss and expert load, and the load at
# step 5 (synthetic data, in double: the same on every machine)
tour_figures(llama_moe RANKS 2 TIMEOUT 120
  COMMAND $<TARGET_FILE:train_llama> --dp 2 --layers 4 --hidden 64 --seq 32 --data synthetic
          --experts 8 --moe-top-k 2 --moe-every 2 --steps 6 --log-every 1 --dtype double
  FIGURES "aux 2.02e-02" "load 1.31" "load 1.58")
