# Bad input on the command line: one clear message, identical on every rank (printed once),
# a non-zero exit, no hang. Each runs under mpiexec with its own timeout.
if(NOT TRIDENT_BUILD_EXAMPLES)
  return()
endif()

# trident_cli_error(name RANKS n EXPECT "message" ARGS program args...)
function(trident_cli_error name)
  cmake_parse_arguments(E "" "RANKS;EXPECT;PROGRAM" "ARGS" ${ARGN})
  set(cmd ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${E_RANKS} $<TARGET_FILE:${E_PROGRAM}> ${E_ARGS})
  string(REPLACE ";" "|" cmd "${cmd}")  # a list survives the command line as a|b|c
  add_test(NAME cli.${name} COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${cmd}" "-DEXPECT=${E_EXPECT}"
           -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_error.cmake)
  set_tests_properties(cli.${name} PROPERTIES TIMEOUT 60 ENVIRONMENT "OMP_NUM_THREADS=1")
endfunction()

set(tiny --layers 2 --hidden 16 --heads 2 --seq 8 --batch 4 --steps 1 --data synthetic)
trident_cli_error(mesh_product RANKS 2 PROGRAM mesh ARGS --tp 8 --pp 16 --dp 64
  EXPECT "mesh TP=8 x PP=16 x DP=64 = 8192 ranks, but the world has 2 ranks")
trident_cli_error(mesh_below_one RANKS 2 PROGRAM train_gpt ARGS ${tiny} --tp 0
  EXPECT "mesh sizes must be at least 1, got TP=0 PP=1 DP=1")
trident_cli_error(train_mesh_product RANKS 2 PROGRAM train_gpt ARGS ${tiny} --tp 2 --pp 2
  EXPECT "mesh TP=2 x PP=2 x DP=1 = 4 ranks, but the world has 2 ranks")
trident_cli_error(heads_not_divisible RANKS 4 PROGRAM train_gpt ARGS ${tiny} --heads 6 --hidden 24 --tp 4
  EXPECT "the 6 attention heads are not divisible by TP=4")
trident_cli_error(tp_above_heads RANKS 4 PROGRAM train_gpt ARGS ${tiny} --tp 4
  EXPECT "TP=4 is larger than the 2 attention heads to split")
trident_cli_error(hidden_not_divisible_by_heads RANKS 1 PROGRAM train_gpt ARGS ${tiny} --hidden 18 --heads 4
  EXPECT "hidden size 18 is not divisible by the 4 heads")
trident_cli_error(pp_above_layers RANKS 4 PROGRAM train_gpt ARGS ${tiny} --pp 4 --microbatches 4
  EXPECT "PP=4 needs at least 4 layers, but the model has 2")
trident_cli_error(pp_layers_text RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 3 --pp 2 --pp-layers 2,x
  EXPECT "--pp-layers: expected auto or layers per stage such as 3,2,2,1, got '2,x'")
trident_cli_error(split_sum RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 4 --pp 2 --pp-layers 3,2
  EXPECT "--pp-layers adds up to 5 layers, but the model has 4")
trident_cli_error(interleaved_microbatches RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 4 --pp 2
  --schedule interleaved --virtual-stages 2 --microbatches 3 --batch 6
  EXPECT "microbatches must be a multiple of stages (Narayanan et al. 2021 §2.2): got 3 microbatches for 2 stages")
trident_cli_error(zb_h1_microbatches RANKS 2 PROGRAM train_gpt ARGS ${tiny} --pp 2
  --schedule zb-h1 --microbatches 1
  EXPECT "pipeline schedule zb-h1: needs at least as many microbatches as stages, m >= p (Qi et al. 2023 §3.1): got 1 microbatches for 2 stages")
trident_cli_error(zb_h1_virtual_stages RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 4 --pp 2
  --schedule zb-h1 --virtual-stages 2 --microbatches 2
  EXPECT "virtual stages need the interleaved schedule (zb-h1 runs 1 model chunk per pipeline rank)")
trident_cli_error(zb_h1_recompute RANKS 2 PROGRAM train_gpt ARGS ${tiny} --pp 2
  --schedule zb-h1 --microbatches 2 --recompute full
  EXPECT "zb-h1 cannot honour --recompute: its W pass (weight gradients) runs after B and needs the block activations that full recomputation drops after B; use 1f1b with --recompute")
trident_cli_error(batch_not_divisible RANKS 2 PROGRAM train_gpt ARGS ${tiny} --dp 2 --batch 5
  EXPECT "the global batch of 5 sequences is not divisible by DP=2 x 1 microbatches")
trident_cli_error(unknown_zero_stage RANKS 2 PROGRAM train_gpt ARGS ${tiny} --zero 4
  EXPECT "--zero: 4 not in {0,1,2,3}")
trident_cli_error(unknown_flag RANKS 2 PROGRAM train_gpt ARGS ${tiny} --bogus
  EXPECT "The following argument was not expected: --bogus")
trident_cli_error(unreadable_data RANKS 2 PROGRAM train_gpt ARGS --data /nonexistent/corpus.txt
  EXPECT "cannot read the data file '/nonexistent/corpus.txt'")
trident_cli_error(unreadable_init RANKS 2 PROGRAM train_gpt ARGS ${tiny} --dp 2 --init /nonexistent/w.safetensors
  EXPECT "/nonexistent/w.safetensors")
trident_cli_error(plan_mesh_product RANKS 1 PROGRAM plan ARGS --preset gpt3-175b --gpus 128 --tp 8 --pp 16 --dp 64
  EXPECT "8192 GPUs, not 128")

# The same losses on two meshes (double): a command a user can type reproduces the
# single-process run.
trident_program(compare_losses cli/compare_losses.cpp)
# trident_same_losses(name RANKS n ARGS mesh flags...): single process vs `mpiexec -n n` with ARGS
function(trident_same_losses name)
  cmake_parse_arguments(S "" "RANKS" "ARGS" ${ARGN})
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/same_losses)
  file(MAKE_DIRECTORY ${dir})
  set(common --dtype double --steps 4 --layers 4 --hidden 32 --heads 4 --seq 16 --batch 8 --log-every 1)
  set(one ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1 $<TARGET_FILE:train_gpt> ${common}
      --json ${dir}/${name}.single.json)
  set(many ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${S_RANKS} $<TARGET_FILE:train_gpt> ${common}
      ${S_ARGS} --json ${dir}/${name}.mesh.json)
  set(cmp $<TARGET_FILE:compare_losses> ${dir}/${name}.single.json ${dir}/${name}.mesh.json 1e-10)
  foreach(v one many cmp)
    string(REPLACE ";" "|" ${v} "${${v}}")
  endforeach()
  add_test(NAME cli.same_losses.${name} COMMAND ${CMAKE_COMMAND} "-DFIRST=${one}" "-DSECOND=${many}"
           "-DCOMPARE=${cmp}" -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/same_losses.cmake)
  set_tests_properties(cli.same_losses.${name} PROPERTIES TIMEOUT 300 ENVIRONMENT "OMP_NUM_THREADS=1")
endfunction()
trident_same_losses(tp2 RANKS 2 ARGS --tp 2)
trident_same_losses(tp2_pp2_dp2_zero3 RANKS 8 ARGS --tp 2 --pp 2 --dp 2 --zero 3)
trident_same_losses(pp2_interleaved_sp RANKS 4 ARGS --tp 2 --pp 2 --sequence-parallel --schedule interleaved --virtual-stages 2 --microbatches 2)
trident_same_losses(pp2_zb_h1_dp2_zero2 RANKS 4 ARGS --pp 2 --dp 2 --zero 2 --schedule zb-h1 --microbatches 2)
