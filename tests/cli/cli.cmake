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
trident_cli_error(layers_uneven RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 3 --pp 2
  EXPECT "the 3 layers do not divide evenly over 2 pipeline stages; give an explicit split with --pp-layers")
trident_cli_error(split_sum RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 4 --pp 2 --pp-layers 3,2
  EXPECT "--pp-layers adds up to 5 layers, but the model has 4")
trident_cli_error(interleaved_microbatches RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 4 --pp 2
  --schedule interleaved --virtual-stages 2 --microbatches 3 --batch 6
  EXPECT "microbatches must be a multiple of stages (Narayanan et al. 2021 §2.2): got 3 microbatches for 2 stages")
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
