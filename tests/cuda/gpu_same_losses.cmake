# Runs FIRST (the CPU) and SECOND (--device cuda; |-separated commands, each writing its run
# report as JSON), then COMPARE (compare_losses): the same per-step losses on the GPU as on the
# CPU. On a machine without a GPU, SECOND says so and the test prints SKIPPED (ctest's
# SKIP_REGULAR_EXPRESSION), never passes.
cmake_policy(SET CMP0054 NEW)  # "SECOND" below is a string, not a variable
foreach(which FIRST SECOND COMPARE)
  string(REPLACE "|" ";" cmd "${${which}}")
  execute_process(COMMAND ${cmd} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(which STREQUAL "SECOND" AND out MATCHES "no CUDA device is visible")
    message("SKIPPED: no GPU is visible:\n${out}")
    return()
  endif()
  message("${out}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${which} failed (status ${status})")
  endif()
endforeach()
