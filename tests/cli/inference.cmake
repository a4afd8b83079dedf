# Evaluation and sampling flags of train_gpt (train/evaluate.hpp, train/sample.hpp): bad values
# are one clear message; the held-out losses and the sample of a mesh are the single process's.
if(NOT TRIDENT_BUILD_EXAMPLES)
  return()
endif()

trident_cli_error(sample_negative RANKS 2 PROGRAM train_gpt ARGS ${tiny} --sample -3
  EXPECT "--sample must be at least 0 tokens, got -3")
trident_cli_error(temperature_zero RANKS 2 PROGRAM train_gpt ARGS ${tiny} --sample 4 --temperature 0
  EXPECT "--temperature must be a finite number > 0, got 0")
trident_cli_error(top_k_zero RANKS 2 PROGRAM train_gpt ARGS ${tiny} --sample 4 --top-k 0
  EXPECT "--top-k must be between 1 and the vocabulary of 256, got 0")
trident_cli_error(top_k_above_vocab RANKS 2 PROGRAM train_gpt ARGS ${tiny} --sample 4 --vocab 67 --top-k 68
  EXPECT "--top-k must be between 1 and the vocabulary of 67, got 68")
trident_cli_error(prompt_above_vocab RANKS 2 PROGRAM train_gpt ARGS ${tiny} --sample 4 --vocab 67 --prompt z
  EXPECT "--prompt has the byte 122, at or above the vocabulary of 67")
trident_cli_error(eval_every_negative RANKS 2 PROGRAM train_gpt ARGS ${tiny} --eval-every -1
  EXPECT "--eval-every must be at least 0 steps (0: no evaluation), got -1")
trident_cli_error(eval_too_little_data RANKS 2 PROGRAM train_gpt ARGS ${tiny} --eval-every 1
  --data ${token_files}/tokens_vocab300.bin --vocab 300 --seq 64
  EXPECT "too few to hold out")

# Single process vs TP2-PP2-DP2 ZeRO-3 on the byte corpus, in double: the held-out losses
# (--eval-every 2 over 4 steps) to 1e-10 and the same sampled text. (The mesh's auto split is
# 2.5 + 1.5: evaluation and sampling run layer 2's halves on two stages.)
trident_program(compare_inference UNTIMED cli/compare_inference.cpp)
set(dir ${CMAKE_CURRENT_BINARY_DIR}/inference)
file(MAKE_DIRECTORY ${dir})
set(common --dtype double --steps 4 --layers 4 --hidden 32 --heads 4 --seq 16 --batch 8
    --eval-every 2 --eval-batches 2 --sample 32 --temperature 0.8 --top-k 40 --sample-seed 3)
set(one ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1 $<TARGET_FILE:train_gpt> ${common}
    --json ${dir}/single.json)
string(REPLACE ";" "|" one "${one}")
# trident_same_inference(name RANKS n ARGS mesh flags...): the mesh's held-out losses and sample
# against the single process's. Under context parallelism the CP rank holding the context's
# last token gives the logits.
function(trident_same_inference name)
  cmake_parse_arguments(I "" "RANKS" "ARGS" ${ARGN})
  set(many ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${I_RANKS} $<TARGET_FILE:train_gpt>
      ${common} ${I_ARGS} --json ${dir}/${name}.json)
  set(cmp $<TARGET_FILE:compare_inference> ${dir}/single.json ${dir}/${name}.json 1e-10)
  string(REPLACE ";" "|" many "${many}")
  string(REPLACE ";" "|" cmp "${cmp}")
  add_test(NAME cli.inference_${name} COMMAND ${CMAKE_COMMAND} "-DFIRST=${one}"
           "-DSECOND=${many}" "-DCOMPARE=${cmp}" -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/same_losses.cmake)
  math(EXPR timeout "300 * ${TRIDENT_TEST_TIMEOUT_FACTOR}")
  set_tests_properties(cli.inference_${name} PROPERTIES TIMEOUT ${timeout}
                       ENVIRONMENT "OMP_NUM_THREADS=1")
endfunction()
trident_same_inference(tp2_pp2_dp2_zero3 RANKS 8 ARGS --tp 2 --pp 2 --dp 2 --zero 3)
trident_same_inference(tp2_cp2_sp RANKS 4 ARGS --tp 2 --cp 2 --sequence-parallel)
