# tests/package/common.cmake: what run.cmake and readme.cmake share.

# run(<what> <command>...): runs the command, fails the test when it fails; its stdout and
# stderr, merged, are left in `output`.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out
                  TIMEOUT 240)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${what} failed (${status}):\n${out}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

# The generator, make program and compiler of trident's own build, for the outside project.
set(tool_args "")
if(GENERATOR)
  list(APPEND tool_args -G ${GENERATOR})
endif()
if(MAKE_PROGRAM)
  list(APPEND tool_args -D CMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
if(CXX_COMPILER)
  list(APPEND tool_args -D CMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
