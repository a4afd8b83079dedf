# Bad input on the command line: one clear message, identical on every rank (printed once),
# a non-zero exit, no hang. Each runs under mpiexec with its own timeout.
if(NOT TRIDENT_BUILD_EXAMPLES)
  return()
endif()

# trident_cli_error(name RANKS n EXPECT "message" PROGRAM program ARGS args... [ENV VAR=value...]
#                   [SKIP_IF_RUNS regex])
function(trident_cli_error name)
  cmake_parse_arguments(E "" "RANKS;EXPECT;PROGRAM;SKIP_IF_RUNS" "ARGS;ENV" ${ARGN})
  set(cmd ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${E_RANKS} $<TARGET_FILE:${E_PROGRAM}> ${E_ARGS})
  string(REPLACE ";" "|" cmd "${cmd}")  # a list survives the command line as a|b|c
  add_test(NAME cli.${name} COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${cmd}" "-DEXPECT=${E_EXPECT}"
           "-DSKIP_IF_RUNS=${E_SKIP_IF_RUNS}" -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_error.cmake)
  math(EXPR timeout "60 * ${TRIDENT_TEST_TIMEOUT_FACTOR}")
  set_tests_properties(cli.${name} PROPERTIES TIMEOUT ${timeout} SKIP_REGULAR_EXPRESSION "SKIPPED: "
                       ENVIRONMENT "OMP_NUM_THREADS=1;${E_ENV}")
endfunction()

# A program's output must contain each of EXPECT's |-separated pieces (cli/expect_output.cmake):
# PROGRAM with ARGS, under mpiexec on RANKS ranks (none: run directly), within TIMEOUT seconds
# (default 60), with OMP_NUM_THREADS=1 and ENV.
function(trident_cli_expect name)
  cmake_parse_arguments(E "" "RANKS;EXPECT;PROGRAM;TIMEOUT" "ARGS;ENV" ${ARGN})
  set(cmd $<TARGET_FILE:${E_PROGRAM}> ${E_ARGS})
  if(E_RANKS)
    set(cmd ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${E_RANKS} ${cmd})
  endif()
  string(REPLACE ";" "|" cmd "${cmd}")
  add_test(NAME cli.${name} COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${cmd}" "-DEXPECT=${E_EXPECT}"
           -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_output.cmake)
  if(NOT E_TIMEOUT)
    set(E_TIMEOUT 60)
  endif()
  set_tests_properties(cli.${name} PROPERTIES TIMEOUT ${E_TIMEOUT}
                       ENVIRONMENT "OMP_NUM_THREADS=1;${E_ENV}")
endfunction()

# trident_steps(name step...): one test, cli.name, running the steps (cli/run_steps.cmake);
# each step a ;-list written with | between words. The first step makes ${dir}, where they write.
function(trident_steps name)
  set(defs "")
  set(n 0)
  foreach(step IN ITEMS "${CMAKE_COMMAND}|-E|make_directory|${dir}" ${ARGN})
    math(EXPR n "${n} + 1")
    list(APPEND defs "-DSTEP${n}=${step}")
  endforeach()
  add_test(NAME cli.${name} COMMAND ${CMAKE_COMMAND} -DSTEPS=${n} ${defs}
           -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/run_steps.cmake)
  set_tests_properties(cli.${name} PROPERTIES TIMEOUT 300 ENVIRONMENT "OMP_NUM_THREADS=1")
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
  EXPECT "--pp-layers: expected auto or layers per stage such as 3,2,2,1 or 2.5,1.5, got '2,x'")
trident_cli_error(pp_layers_not_half RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 3 --pp 2 --pp-layers 1.7,1.3
  EXPECT "--pp-layers: expected auto or layers per stage such as 3,2,2,1 or 2.5,1.5, got '1.7,1.3'")
trident_cli_error(pp_layers_half_sum RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 3 --pp 2 --pp-layers 1.5,2
  EXPECT "--pp-layers adds up to 3.5 layers, but the model has 3")
trident_cli_error(split_sum RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 4 --pp 2 --pp-layers 3,2
  EXPECT "--pp-layers adds up to 5 layers, but the model has 4")
trident_cli_error(stage_scale_count RANKS 2 PROGRAM pipeline_schedule ARGS --stages 2 --stage-scale 1
  EXPECT "--stage-scale needs one factor per stage: got 1 for 2 stages")
trident_cli_error(stage_scale_text RANKS 2 PROGRAM pipeline_schedule ARGS --stages 2 --stage-scale 1,x
  EXPECT "--stage-scale: expected a positive factor per stage such as 1,1.04, got 'x'")
trident_cli_error(stage_scale_negative RANKS 2 PROGRAM pipeline_schedule ARGS --stages 2 --stage-scale 1,-2
  EXPECT "--stage-scale: expected a positive factor per stage such as 1,1.04, got '-2'")
trident_cli_error(interleaved_microbatches RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 4 --pp 2
  --schedule interleaved --virtual-stages 2 --microbatches 3 --batch 6
  EXPECT "microbatches must be a multiple of stages (Narayanan et al. 2021 §2.2): got 3 microbatches for 2 stages")
trident_cli_error(zb_h1_microbatches RANKS 2 PROGRAM train_gpt ARGS ${tiny} --pp 2
  --schedule zb-h1 --microbatches 1
  EXPECT "pipeline schedule zb-h1: needs at least as many microbatches as stages, m >= p (Qi et al. 2023 §3.1): got 1 microbatches for 2 stages")
trident_cli_error(zb_h1_virtual_stages RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 4 --pp 2
  --schedule zb-h1 --virtual-stages 2 --microbatches 2
  EXPECT "virtual stages need the interleaved or zbv schedule (zb-h1 runs 1 model chunk per pipeline rank)")
trident_cli_error(zb_h1_recompute RANKS 2 PROGRAM train_gpt ARGS ${tiny} --pp 2
  --schedule zb-h1 --microbatches 2 --recompute full
  EXPECT "zb-h1 cannot honour --recompute: its W pass (weight gradients) runs after B and needs the block activations that full recomputation drops after B; use 1f1b with --recompute")
# selective recomputation would rerun ring attention: refused under context parallelism
trident_cli_error(selective_recompute_cp2 RANKS 2 PROGRAM train_gpt ARGS ${tiny} --cp 2
  --recompute selective
  EXPECT "--recompute selective recomputes the attention core from each rank's kept q, k, v; under context parallelism (--cp 2) that would rerun the ring: use --recompute none or full")
trident_cli_error(zbv_microbatches RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 4 --pp 2
  --schedule zbv --microbatches 1
  EXPECT "pipeline schedule zbv: needs at least as many microbatches as stages, m >= p (Qi et al. 2024): got 1 microbatches for 2 stages")
trident_cli_error(zbv_virtual_stages RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 6 --pp 2
  --schedule zbv --virtual-stages 3 --microbatches 2
  EXPECT "zbv runs 2 model chunks per pipeline rank, placed in a V: --virtual-stages must be 2 (got 3)")
trident_cli_error(zbv_too_few_layers RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 3 --pp 2
  --schedule zbv --microbatches 2
  EXPECT "PP=2 x 2 virtual stages needs at least 4 layers, but the model has 3")
trident_cli_error(zbv_pp_layers RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 4 --pp 2
  --schedule zbv --microbatches 2 --pp-layers 2,2
  EXPECT "--pp-layers lists 2 stages, but the pipeline has 4 (PP x virtual stages)")
trident_cli_error(zbv_recompute RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 4 --pp 2
  --schedule zbv --microbatches 2 --recompute full
  EXPECT "zbv cannot honour --recompute: its W pass (weight gradients) runs after B and needs the block activations that full recomputation drops after B; use 1f1b with --recompute")
# the pipeline's message tags stay below the tied gradients' tag (core/message_tags.hpp)
trident_cli_error(pipeline_tags RANKS 2 PROGRAM train_gpt ARGS ${tiny} --pp 2 --microbatches 16001
  --batch 16001
  EXPECT "too many microbatches for the pipeline's message tags: 2 x 1 model chunks x 16001 microbatches = 32002 tags, at most 32000 (the tied gradients' tag, core/message_tags.hpp)")
trident_cli_error(batch_not_divisible RANKS 2 PROGRAM train_gpt ARGS ${tiny} --dp 2 --batch 5
  EXPECT "the global batch of 5 sequences is not divisible by DP=2 x 1 microbatches")
trident_cli_error(unknown_zero_stage RANKS 2 PROGRAM train_gpt ARGS ${tiny} --zero 4
  EXPECT "--zero: 4 not in {0,1,2,3}")
trident_cli_error(overlap_grad_reduce RANKS 2 PROGRAM train_gpt ARGS ${tiny} --dp 2 --overlap-grad-reduce yes
  EXPECT "--overlap-grad-reduce: yes not in {auto,on,off}")
trident_cli_error(unknown_flag RANKS 2 PROGRAM train_gpt ARGS ${tiny} --bogus
  EXPECT "The following argument was not expected: --bogus")
trident_cli_error(unreadable_data RANKS 2 PROGRAM train_gpt ARGS --data /nonexistent/corpus.txt
  EXPECT "cannot read the data file '/nonexistent/corpus.txt'")
trident_cli_error(unreadable_init RANKS 2 PROGRAM train_gpt ARGS ${tiny} --dp 2 --init /nonexistent/w.safetensors
  EXPECT "/nonexistent/w.safetensors")
# token files (data/token_file.hpp): ids at or above the vocab, a file shorter than its header says.
# cli/data/tokens_vocab300.bin: llm.c's layout, version 1, 100 ids (7919 i + 3) mod 300 with 299
# at position 50; tokens_truncated.bin: the same ids as version 2 (uint32), less its last 6 bytes.
set(token_files ${CMAKE_CURRENT_SOURCE_DIR}/cli/data)
trident_cli_error(token_file_vocab RANKS 2 PROGRAM train_gpt ARGS ${tiny} --dp 2 --data ${token_files}/tokens_vocab300.bin
  EXPECT "tokens_vocab300.bin' has token ids up to 299, at or above the model's vocabulary of 256")
trident_cli_error(token_file_truncated RANKS 2 PROGRAM train_gpt ARGS ${tiny} --data ${token_files}/tokens_truncated.bin
  EXPECT "tokens_truncated.bin' declares 100 tokens of 4 bytes (1424 bytes with the header) but has 1418 bytes")
trident_cli_error(data_directory RANKS 2 PROGRAM train_gpt ARGS ${tiny} --data ${CMAKE_CURRENT_SOURCE_DIR}
  EXPECT "is a directory, not a file")
trident_cli_error(virtual_stages_zero RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 4 --pp 2
  --schedule interleaved --virtual-stages 0 EXPECT "--virtual-stages must be at least 1, got 0")
trident_cli_error(lr_nan RANKS 2 PROGRAM train_gpt ARGS ${tiny} --dp 2 --lr nan
  EXPECT "the learning rate (--lr) must be a finite number > 0, got nan")
trident_cli_error(lr_negative RANKS 2 PROGRAM train_gpt ARGS ${tiny} --dp 2 --lr -1
  EXPECT "the learning rate (--lr) must be a finite number > 0, got -1")
trident_cli_error(steps_zero RANKS 2 PROGRAM train_gpt ARGS ${tiny} --steps 0
  EXPECT "--steps must be at least 1")
trident_cli_error(threads_negative RANKS 2 PROGRAM train_gpt ARGS ${tiny} --threads -2
  EXPECT "--threads must be at least 0")
trident_cli_error(timeout_zero RANKS 2 PROGRAM train_gpt ARGS ${tiny} --timeout 0
  EXPECT "--timeout must be a number of seconds > 0, got 0")
trident_cli_error(timeout_environment RANKS 2 PROGRAM train_gpt ARGS ${tiny} ENV TRIDENT_TIMEOUT=soon
  EXPECT "TRIDENT_TIMEOUT must be a number of seconds > 0, got nan")
trident_cli_error(fault_malformed RANKS 2 PROGRAM train_gpt ARGS ${tiny} --dp 2 ENV TRIDENT_FAULT=nan-loss:rank=x
  EXPECT "TRIDENT_FAULT='nan-loss:rank=x': 'x' is not a number >= 0")
trident_cli_error(nan_loss_stops RANKS 2 PROGRAM train_gpt ARGS ${tiny} --steps 4 --dp 2
  ENV TRIDENT_FAULT=nan-loss:rank=1:step=2 EXPECT "step 2: the loss is nan and the gradient norm")
trident_cli_error(log_every_zero RANKS 1 PROGRAM train_gpt ARGS ${tiny} --log-every 0
  EXPECT "--log-every must be at least 1")
trident_cli_error(weight_too_large RANKS 1 PROGRAM train_gpt ARGS ${tiny} --vocab 2000000000
  EXPECT "the model's largest weight has 32000000000 elements, more than 2^31 - 1")
trident_cli_error(activations_too_large RANKS 1 PROGRAM train_gpt ARGS ${tiny} --seq 30000
  --hidden 2 --heads 2 --batch 2 EXPECT "a microbatch's activations (2 sequences x 30000 tokens x 60000)")
# context parallelism: chunks that do not divide the sequence; a mesh that is not the world
trident_cli_error(cp_zigzag_chunks RANKS 2 PROGRAM train_gpt ARGS ${tiny} --seq 6 --cp 2
  EXPECT "context parallelism: the sequence of 6 tokens is not divisible into 4 chunks (zigzag split, CP=2: 2 chunks per rank)")
trident_cli_error(cp_contiguous_chunks RANKS 4 PROGRAM train_gpt ARGS ${tiny} --seq 6 --cp 4 --cp-split contiguous
  EXPECT "the sequence of 6 tokens is not divisible into 4 chunks (contiguous split, CP=4)")
trident_cli_error(cp_mesh_product RANKS 2 PROGRAM train_gpt ARGS ${tiny} --cp 4
  EXPECT "mesh TP=1 x CP=4 x PP=1 x DP=1 = 4 ranks, but the world has 2 ranks")
trident_cli_error(cp_split_name RANKS 1 PROGRAM train_gpt ARGS ${tiny} --cp-split ring
  EXPECT "--cp-split")
trident_cli_error(plan_mesh_product RANKS 1 PROGRAM plan ARGS --preset gpt3-175b --gpus 128 --tp 8 --pp 16 --dp 64
  EXPECT "8192 GPUs, not 128")

# The same losses on two meshes (double): a command a user can type reproduces the
# single-process run.
trident_program(compare_losses UNTIMED cli/compare_losses.cpp)
# trident_same_losses(name RANKS n ARGS mesh flags... [BOTH flags...] [PROGRAM p]): single
# process vs `mpiexec -n n` with ARGS, both runs of p (default train_gpt) with BOTH
function(trident_same_losses name)
  cmake_parse_arguments(S "" "RANKS;PROGRAM" "ARGS;BOTH" ${ARGN})
  if(NOT S_PROGRAM)
    set(S_PROGRAM train_gpt)
  endif()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/same_losses)
  file(MAKE_DIRECTORY ${dir})
  set(common --dtype double --steps 4 --layers 4 --hidden 32 --heads 4 --seq 16 --batch 8 --log-every 1
      ${S_BOTH})
  set(one ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1 $<TARGET_FILE:${S_PROGRAM}> ${common}
      --json ${dir}/${name}.single.json)
  set(many ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${S_RANKS} $<TARGET_FILE:${S_PROGRAM}> ${common}
      ${S_ARGS} --json ${dir}/${name}.mesh.json)
  set(cmp $<TARGET_FILE:compare_losses> ${dir}/${name}.single.json ${dir}/${name}.mesh.json 1e-10)
  foreach(v one many cmp)
    string(REPLACE ";" "|" ${v} "${${v}}")
  endforeach()
  add_test(NAME cli.same_losses.${name} COMMAND ${CMAKE_COMMAND} "-DFIRST=${one}" "-DSECOND=${many}"
           "-DCOMPARE=${cmp}" -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/same_losses.cmake)
  math(EXPR timeout "300 * ${TRIDENT_TEST_TIMEOUT_FACTOR}")
  set_tests_properties(cli.same_losses.${name} PROPERTIES TIMEOUT ${timeout} ENVIRONMENT "OMP_NUM_THREADS=1")
endfunction()
trident_same_losses(tp2 RANKS 2 ARGS --tp 2)
trident_same_losses(tp2_pp2_dp2_zero3 RANKS 8 ARGS --tp 2 --pp 2 --dp 2 --zero 3)
trident_same_losses(pp2_interleaved_sp RANKS 4 ARGS --tp 2 --pp 2 --sequence-parallel --schedule interleaved --virtual-stages 2 --microbatches 2)
# the DP reductions during the backward (MPI, nonblocking) and after it (shared memory)
trident_same_losses(dp4_zero1_overlapped RANKS 4 ARGS --dp 4 --zero 1 --overlap-grad-reduce on)
trident_same_losses(dp4_zero0_at_end RANKS 4 ARGS --dp 4 --overlap-grad-reduce off)
trident_same_losses(pp2_zb_h1_dp2_zero2 RANKS 4 ARGS --pp 2 --dp 2 --zero 2 --schedule zb-h1 --microbatches 2)
# ZB-V: the embedding and the head (and their tied copies) both on pipeline rank 0
trident_same_losses(pp2_zbv_tp2 RANKS 4 ARGS --tp 2 --pp 2 --schedule zbv --microbatches 2)
trident_same_losses(pp2_zbv_dp2_zero1 RANKS 4 ARGS --pp 2 --dp 2 --zero 1 --schedule zbv --microbatches 4)
# PP = 1 with two virtual stages: both copies of the tied embedding on one rank (summed locally)
trident_same_losses(pp1_interleaved RANKS 1 ARGS --schedule interleaved --virtual-stages 2 --microbatches 2)
# context parallelism (ring attention) composed with TP and SP, with DP and ZeRO-3, with 1F1B
trident_same_losses(tp2_sp_cp2 RANKS 4 ARGS --tp 2 --cp 2 --sequence-parallel)
trident_same_losses(cp2_dp2_zero3_pp2 RANKS 8 ARGS --cp 2 --dp 2 --zero 3 --pp 2 --microbatches 2)
trident_same_losses(llama_cp2_contiguous RANKS 2 PROGRAM train_llama ARGS --cp 2 --cp-split contiguous)
# selective recomputation (the attention probabilities recomputed in the backward) with ZB-H1's
# B/W split, and with TP and SP on Llama
trident_same_losses(selective_pp2_zb_h1 RANKS 2 ARGS --pp 2 --schedule zb-h1 --microbatches 2
  --recompute selective)
trident_same_losses(llama_selective_tp2_sp RANKS 2 PROGRAM train_llama ARGS --tp 2
  --sequence-parallel --recompute selective)
# a token file (llm.c layout) as the data
trident_same_losses(token_file_dp2 RANKS 2 ARGS --dp 2 BOTH --data ${token_files}/tokens_vocab300.bin --vocab 300)
# On the emulated device (--device emulated: guarded device memory, collectives staged through
# the host), against the single-process run on the CPU.
trident_same_losses(emulated_tp2_pp2_dp2_zero1 RANKS 8 ARGS --tp 2 --pp 2 --dp 2 --zero 1 --device emulated)
trident_same_losses(emulated_cp4 RANKS 4 ARGS --cp 4 --device emulated)
trident_same_losses(emulated_tp2_sp_pp2_zbv RANKS 4 ARGS --tp 2 --pp 2 --sequence-parallel --schedule zbv
  --microbatches 2 --device emulated)

# A run of one step (which warms up and is not measured) reports no throughput and no bubble.
trident_cli_expect(one_step_report RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layers 4 --pp 2
  --microbatches 2
  EXPECT "1 steps: loss|n/a tokens/s (one step, which warms up)|pipeline bubble: measured n/a")

# pipeline_schedule with unequal stages, worked by hand (p = 2, m = 2; F 1, B 1, W 1 on stage 0,
# 1.5 each on stage 1): ZB-H1 idles 5 of 2 x 10, 1F1B 9 of 2 x 12; on equal stages 2 of 14, 6 of 18.
trident_cli_expect(pipeline_schedule_unequal PROGRAM pipeline_schedule ARGS --schedule zb-h1
  --stages 2 --microbatches 2 --backward-cost 2 --stage-scale 1,1.5
  EXPECT "bubble fraction: simulated 0.2500 (equal: 0.1429); 1F1B on the same stages 0.3750 (equal: 0.3333); zb-h1 / 1F1B 0.667 (equal: 0.429)")

# long_context's three ways on 4 ranks, small: every run measured next to the cost model, the
# ring's bytes next to the formula, and the ring's SVG written.
trident_cli_expect(long_context RANKS 4 PROGRAM long_context TIMEOUT 180 ARGS --seq 256 --hidden 32
  --steps 1 --svg ${CMAKE_CURRENT_BINARY_DIR}/long_context_ring.svg
  EXPECT "TP2-DP2 SP recompute|TP2-CP2 zigzag|TP2-CP2 contiguous|0.094 / 0.094|wrote ")
trident_cli_error(long_context_seq RANKS 4 PROGRAM long_context ARGS --seq 250 --steps 1
  EXPECT "context parallelism: the sequence of 250 tokens is not divisible into 4 chunks")

# --layout auto (costmodel/layout.hpp) on 4 ranks: the layouts ranked, two tried, the fastest
# trained with; its bad input.
set(calibrations TRIDENT_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/cache)
trident_cli_expect(layout_auto RANKS 4 PROGRAM train_gpt TIMEOUT 300 ENV ${calibrations} ARGS ${tiny}
  --steps 2 --layout auto --layout-trials 2 --memory-limit 64
  EXPECT "layout auto: |refused by the trainer's validate|over the memory limit (64.0 MiB per rank)|calibration: |measurements reused from ${CMAKE_CURRENT_BINARY_DIR}/cache/calibration.tsv|<- chosen (fastest measured)|2 steps: loss")
trident_cli_expect(dry_run RANKS 2 PROGRAM train_gpt ARGS ${tiny} --pp 2 --schedule zb-h1
  --microbatches 2 --dry-run
  EXPECT "dry run, TP1-PP2-DP1 ZeRO-0 zb-h1 m=2: memory per rank|trident_buffers.hpp|activations    buffers      total")
# bf16 mixed precision: its trials run in bf16; the calibration (float kernels) reused from the
# test above when it ran first, on the same ranks and build
trident_cli_expect(layout_auto_bf16 RANKS 4 PROGRAM train_gpt TIMEOUT 300 ENV ${calibrations}
  ARGS ${tiny} --steps 2 --layout auto --layout-trials 1 --precision bf16
  EXPECT "layout auto: |<- chosen (fastest measured)|float/bf16|2 steps: loss")
trident_cli_error(layout_auto_double RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layout auto
  --dtype double EXPECT "--layout auto calibrates float kernels on the CPU: --device cpu --dtype float")
trident_cli_error(layout_auto_mesh_flag RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layout auto --tp 2
  EXPECT "--layout auto chooses --tp itself: leave it out, or use --layout manual")
trident_cli_error(layout_auto_memory RANKS 2 PROGRAM train_gpt ARGS ${tiny} --layout auto
  --memory-limit 0.001 EXPECT "no layout fits the memory limit of 0.00 MiB per rank: the smallest predicted peak is")
trident_cli_error(layout_auto_none_valid RANKS 4 PROGRAM train_gpt ARGS --layers 3 --hidden 24
  --heads 3 --seq 6 --batch 3 --steps 1 --data synthetic --layout auto
  EXPECT "no valid layout of the model on 4 ranks")

# compare_losses fails on a loss that is not a number.
add_test(NAME cli.compare_losses_nan COMMAND ${CMAKE_COMMAND} -DCOMPARE=$<TARGET_FILE:compare_losses>
         -DDIR=${CMAKE_CURRENT_BINARY_DIR} -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/compare_nan.cmake)

# Faults (core/fault.hpp): the job fails with the expected report within a time limit.
# trident_cli_fault(name RANKS n FAULT spec SECONDS s [FROM_MARK text] [ENV VAR=value...]
#                   [MPIEXEC mpiexec options] EXPECT lines... ARGS ...)
function(trident_cli_fault name)
  cmake_parse_arguments(F "" "RANKS;FAULT;SECONDS;FROM_MARK" "EXPECT;ARGS;ENV;MPIEXEC" ${ARGN})
  set(cmd ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${F_RANKS} ${F_MPIEXEC}
      $<TARGET_FILE:train_gpt> ${F_ARGS})
  string(REPLACE ";" "|" cmd "${cmd}")
  string(REPLACE ";" "|" expect "${F_EXPECT}")
  add_test(NAME cli.fault.${name} COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${cmd}" "-DEXPECT=${expect}"
           "-DSECONDS=${F_SECONDS}" "-DFROM_MARK=${F_FROM_MARK}"
           -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_fault.cmake)
  math(EXPR timeout "120 * ${TRIDENT_TEST_TIMEOUT_FACTOR}")
  set_tests_properties(cli.fault.${name} PROPERTIES TIMEOUT ${timeout}
                       ENVIRONMENT "OMP_NUM_THREADS=1;TRIDENT_FAULT=${F_FAULT};${F_ENV}")
endfunction()
set(small --layers 2 --hidden 16 --heads 2 --seq 8 --batch 8 --steps 6 --data synthetic)
# The watchdog: rank 1 skips the barrier that starts step 2; the other ranks wait for it there,
# rank 1 waits for its TP partner in the step's first all-reduce. Timeout 3 s; the whole run
# (start-up, two steps, 3 s, the report) within 30 s.
trident_cli_fault(skip_collective RANKS 4 FAULT skip-collective:rank=1:step=2 SECONDS 30
  ARGS ${small} --tp 2 --dp 2 --timeout 3
  EXPECT "[rank 0] trident watchdog: waited 3"
         "[rank 0] missing from barrier on group 'world': rank 1"
         "[rank 1] missing from all_reduce on group 'tp': rank 0"
         "SKIPPED (fault injection)")
# The same through the pipeline (point-to-point), the timeout from the environment: 3 s, but
# 100 s on rank 0 (mpiexec's MPMD form), whose watchdog fires when the others' announce the hang.
set(pp_run ${small} --pp 2 --dp 2 --microbatches 2)
trident_cli_fault(skip_collective_pp RANKS 1 FAULT skip-collective:rank=3:step=1 SECONDS 30
  MPIEXEC -env TRIDENT_TIMEOUT 100 ARGS ${pp_run} : -n 3 $<TARGET_FILE:train_gpt> ${pp_run}
  ENV TRIDENT_TIMEOUT=3
  EXPECT "[rank 0] trident watchdog: waited"
         "(another rank's watchdog fired) for barrier on 'world'"
         "[rank 0] missing from barrier on group 'world': rank 3"
         "[rank 3] trident watchdog: waited 3"
         "[rank 3] missing from recv on group 'pp': rank 1")
# A rank killed mid-step: every rank gone within 5 s of the kill (mpiexec tears the job down;
# the watchdog's 60 s cannot be what ends it).
trident_cli_fault(kill_mid_step RANKS 4 FAULT kill-mid-step:rank=2:step=2 SECONDS 5
  FROM_MARK "at epoch" ARGS ${small} --tp 2 --dp 2 --timeout 60
  EXPECT "trident fault: rank 2 kills itself with SIGKILL in step 2")

# --config and --write-config: a run repeated from its report alone (tests/cli/config_rerun.cmake),
# with flags of every kind (numbers, strings, a list, a flag); a bad key or value names the
# file and the line; an unwritable --write-config fails at the start.
set(config_dir ${CMAKE_CURRENT_BINARY_DIR}/config_rerun)
file(MAKE_DIRECTORY ${config_dir})
add_test(NAME cli.config_rerun COMMAND ${CMAKE_COMMAND}
         "-DCOMMAND=${MPIEXEC_EXECUTABLE}|${MPIEXEC_NUMPROC_FLAG}|4|$<TARGET_FILE:train_gpt>|--tp|2|--pp|2|--sequence-parallel|--schedule|zb-h1|--microbatches|2|--pp-layers|1.5,0.5|--zero|0|--layers|2|--hidden|16|--heads|2|--seq|8|--batch|4|--steps|3|--lr|0.01|--data|synthetic|--json|${config_dir}/a.json|--write-config|${config_dir}/written.toml"
         -DMPIEXEC=${MPIEXEC_EXECUTABLE} -DRANKS=4 -DPROGRAM=$<TARGET_FILE:train_gpt>
         -DA=${config_dir}/a.json -DB=${config_dir}/b.json -DCONFIG=${config_dir}/written.toml
         -DFROM_REPORT=${config_dir}/from_report.toml
         -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/config_rerun.cmake)
set_tests_properties(cli.config_rerun PROPERTIES TIMEOUT 120 PROCESSORS 4
                     ENVIRONMENT "OMP_NUM_THREADS=1")
trident_cli_error(config_unknown_key RANKS 2 PROGRAM train_gpt
  ARGS --config ${CMAKE_CURRENT_SOURCE_DIR}/cli/configs/unknown_key.toml
  EXPECT "unknown_key.toml:3: key 'bogus': INI was not able to parse bogus")
trident_cli_error(config_wrong_type RANKS 2 PROGRAM train_gpt
  ARGS --config ${CMAKE_CURRENT_SOURCE_DIR}/cli/configs/wrong_type.toml
  EXPECT "wrong_type.toml:3: key 'steps': Could not convert: --steps = many")
trident_cli_error(config_missing RANKS 2 PROGRAM train_gpt ARGS --config no_such_file.toml
  EXPECT "no_such_file.toml was not readable")
trident_cli_error(write_config_unwritable RANKS 2 PROGRAM train_gpt ARGS ${tiny}
  --write-config no_such_folder/run.toml EXPECT "--write-config: cannot write no_such_folder/run.toml")

# --metrics (io/metrics_log.hpp): a line per step and per evaluation that agrees with the --json
# report (cli/check_metrics.cpp: losses bit for bit, MFU's formula, traffic and memory peaks),
# on TP2-PP2 and on DP2 ZeRO-3 with held-out losses; an unwritable file fails at the start.
trident_program(check_metrics UNTIMED cli/check_metrics.cpp)
set(dir ${CMAKE_CURRENT_BINARY_DIR}/metrics)
file(MAKE_DIRECTORY ${dir})
set(metrics_run ${MPIEXEC_EXECUTABLE}|${MPIEXEC_NUMPROC_FLAG})
set(metrics_model --layers|4|--hidden|32|--heads|4|--seq|16|--batch|8|--data|synthetic)
trident_steps(metrics.tp2_pp2
  "${metrics_run}|4|$<TARGET_FILE:train_gpt>|${metrics_model}|--steps|4|--tp|2|--pp|2|--microbatches|2|--metrics|${dir}/a.jsonl|--json|${dir}/a.json"
  "OUTPUT|measured on this machine: sgemm 512x512x1024 with all 4 ranks at once"
  "$<TARGET_FILE:check_metrics>|${dir}/a.jsonl|${dir}/a.json")
trident_steps(metrics.dp2_zero3_eval
  "${metrics_run}|2|$<TARGET_FILE:train_gpt>|${metrics_model}|--steps|5|--dp|2|--zero|3|--eval-every|2|--metrics|${dir}/b.jsonl|--json|${dir}/b.json"
  "$<TARGET_FILE:check_metrics>|${dir}/b.jsonl|${dir}/b.json")
trident_cli_error(metrics_unwritable RANKS 2 PROGRAM train_gpt ARGS ${tiny}
  --metrics no_such_folder/m.jsonl EXPECT "--metrics: cannot write no_such_folder/m.jsonl")

# --html (io/html_report.hpp): the page, opened in headless Chromium (cli/html_report.cmake), has
# no console message and plots the JSON's numbers (cli/check_html.cpp); an unwritable page fails
# at the start.
trident_program(check_html UNTIMED cli/check_html.cpp)
add_test(NAME cli.html_report COMMAND ${CMAKE_COMMAND}
         "-DCOMMAND=${metrics_run}|4|$<TARGET_FILE:train_gpt>|${metrics_model}|--steps|6|--tp|2|--pp|2|--microbatches|4|--eval-every|2|--html|${dir}/report.html|--json|${dir}/report.json"
         -DPAGE=${dir}/report.html -DJSON=${dir}/report.json -DCHECK=$<TARGET_FILE:check_html>
         -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/html_report.cmake)
set_tests_properties(cli.html_report PROPERTIES TIMEOUT 240 SKIP_REGULAR_EXPRESSION "SKIPPED: "
                     ENVIRONMENT "OMP_NUM_THREADS=1")
trident_cli_error(html_unwritable RANKS 2 PROGRAM train_gpt ARGS ${tiny}
  --html no_such_folder/r.html EXPECT "--html: cannot write no_such_folder/r.html")

# Who made whom wait (train/waits.hpp): rank SLOW sleeps 30 ms before each forward pass of a
# microbatch (TRIDENT_FAULT=slow); the report must attribute >= 90% of the sleeps to it and, on
# every rank, compute + exposed communication + waiting = the step within 5%
# (cli/check_waits.cpp), on TP2, PP2, DP2 ZeRO-3 and TP2-PP2-DP2.
trident_program(check_waits UNTIMED cli/check_waits.cpp)
function(trident_waits name ranks slow mesh)
  set(json ${dir}/waits_${name}.json)
  trident_steps(waits.${name}
    "${metrics_run}|${ranks}|$<TARGET_FILE:train_gpt>|${metrics_model}|--steps|4|${mesh}|--json|${json}"
    "$<TARGET_FILE:check_waits>|${json}|${slow}")
  set_property(TEST cli.waits.${name} APPEND PROPERTY ENVIRONMENT "TRIDENT_FAULT=slow:rank=${slow}:ms=30")
endfunction()
trident_waits(tp2 2 1 --tp|2)
trident_waits(pp2 2 0 --pp|2|--microbatches|4)
trident_waits(dp2_zero3 2 1 --dp|2|--zero|3)
trident_waits(tp2_pp2_dp2 8 5 --tp|2|--pp|2|--dp|2|--microbatches|2)

# The JSON report's formulas: forms, inputs and values that agree (tests/cli/report_json.cmake).
add_test(NAME cli.report_json COMMAND ${CMAKE_COMMAND}
         "-DCOMMAND=${MPIEXEC_EXECUTABLE}|${MPIEXEC_NUMPROC_FLAG}|8|$<TARGET_FILE:train_gpt>|--tp|2|--pp|2|--dp|2|--zero|1|--schedule|1f1b|--microbatches|4|--layers|4|--hidden|32|--heads|4|--seq|8|--batch|8|--steps|3|--data|synthetic|--json|${CMAKE_CURRENT_BINARY_DIR}/report.json"
         -DJSON=${CMAKE_CURRENT_BINARY_DIR}/report.json
         -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/report_json.cmake)
set_tests_properties(cli.report_json PROPERTIES TIMEOUT 180 PROCESSORS 8
                     ENVIRONMENT "OMP_NUM_THREADS=1")

# --skip-nonfinite: a step with a NaN gradient norm is skipped, counted and reported.
add_test(NAME cli.skip_nonfinite COMMAND ${CMAKE_COMMAND}
         "-DCOMMAND=${MPIEXEC_EXECUTABLE}|${MPIEXEC_NUMPROC_FLAG}|2|$<TARGET_FILE:train_gpt>|--layers|2|--hidden|16|--heads|2|--seq|8|--batch|4|--steps|5|--dp|2|--data|synthetic|--skip-nonfinite|--json|${CMAKE_CURRENT_BINARY_DIR}/skip_nonfinite.json"
         -DJSON=${CMAKE_CURRENT_BINARY_DIR}/skip_nonfinite.json
         -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/skip_nonfinite.cmake)
set_tests_properties(cli.skip_nonfinite PROPERTIES TIMEOUT 120
                     ENVIRONMENT "OMP_NUM_THREADS=1;TRIDENT_FAULT=nan-grad:rank=1:step=2")

# --device cuda (io/device_flag.hpp): refused with one message naming what is missing.
# The CUDA build's answer on a machine without a GPU (cmake/cuda_tests.sh checks the same
# function in cuda_host without building train_gpt).
if(TRIDENT_WITH_CUDA)
  trident_cli_error(device_cuda RANKS 2 PROGRAM train_gpt ARGS ${tiny} --device cuda
    EXPECT "--device cuda: no CUDA device is visible to this process (cudaGetDeviceCount: "
    SKIP_IF_RUNS "device cuda:[0-9]")
  set_tests_properties(cli.device_cuda PROPERTIES LABELS cuda)  # run by cmake/cuda_tests.sh
else()
  trident_cli_error(device_cuda RANKS 2 PROGRAM train_gpt ARGS ${tiny} --device cuda
    EXPECT "--device cuda: this program was built without the CUDA backend (configure with -DTRIDENT_WITH_CUDA=ON); it runs on --device cpu or emulated")
endif()
trident_cli_error(device_unknown RANKS 2 PROGRAM train_gpt ARGS ${tiny} --device gpu
  EXPECT "--device: expected cpu, emulated or cuda, got 'gpu'")
# A device too small for the model states: one Error on every rank naming the device, the bytes
# asked for and what holds the rest (backend/caching_allocator.hpp, train/model_states.hpp).
trident_cli_error(emulated_out_of_memory RANKS 2 PROGRAM train_gpt ARGS ${tiny} --hidden 64
  --vocab 4096 --tp 2 --device emulated ENV TRIDENT_EMULATED_MEMORY=256K
  EXPECT "emulated device (262144 bytes, TRIDENT_EMULATED_MEMORY): out of memory: asked for ")
