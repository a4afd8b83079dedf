# Runs FIRST and SECOND (|-separated commands, each writing its run report as JSON), then
# COMPARE (compare_losses FIRST.json SECOND.json TOLERANCE): the same training on two meshes
# gives the same per-step losses.
foreach(which FIRST SECOND COMPARE)
  string(REPLACE "|" ";" cmd "${${which}}")
  execute_process(COMMAND ${cmd} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${which} failed (status ${status})")
  endif()
endforeach()
