# Runs COMMAND (|-separated; train_gpt --steps 5 --skip-nonfinite --json JSON under a fault that
# makes the gradient norm of step 2 NaN) and passes when it succeeds, says so, and its report
# lists step 2 as skipped. Then the skipped step must leave the parameters as they were: 3 steps
# whose step 2 is skipped save the same bytes as 2 steps (steps 0 and 1 have the same data and
# learning rate in both runs: warm-up of 1 step, then the cosine's first value).
string(REPLACE "|" ";" COMMAND "${COMMAND}")
file(REMOVE ${JSON})
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "failed with status ${status}")
endif()
if(NOT out MATCHES "step +2 \\| loss [0-9.]+ \\| norm nan [^\n]*skipped: not finite")
  message(FATAL_ERROR "no progress line saying step 2 was skipped")
endif()
if(NOT out MATCHES "skipped 1 step\\(s\\) with a non-finite loss or gradient norm: 2\n")
  message(FATAL_ERROR "the closing report does not count the skipped step")
endif()
file(READ ${JSON} json)
string(JSON count LENGTH "${json}" skipped_steps)
string(JSON first GET "${json}" skipped_steps 0)
string(JSON steps LENGTH "${json}" losses)
if(NOT count EQUAL 1 OR NOT first EQUAL 2 OR NOT steps EQUAL 5)
  message(FATAL_ERROR "JSON: skipped_steps has ${count} entries, the first ${first}; ${steps} losses")
endif()

string(REPLACE "--steps;5" "--steps;3" three "${COMMAND}")
string(REPLACE "--steps;5" "--steps;2" two "${COMMAND}")
execute_process(COMMAND ${three} --save ${JSON}.3.safetensors RESULT_VARIABLE s3 OUTPUT_QUIET)
execute_process(COMMAND ${two} --save ${JSON}.2.safetensors RESULT_VARIABLE s2 OUTPUT_QUIET)
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${JSON}.3.safetensors
                        ${JSON}.2.safetensors RESULT_VARIABLE differ)
if(NOT s3 EQUAL 0 OR NOT s2 EQUAL 0 OR NOT differ EQUAL 0)
  message(FATAL_ERROR "the skipped step changed the parameters (status ${s3}, ${s2}, "
                      "files differ: ${differ})")
endif()
