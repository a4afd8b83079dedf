# A run repeated from its report alone (--config, io/train_program.hpp): runs COMMAND
# (|-separated, with --json A and --write-config CONFIG), takes the effective configuration the
# report embeds (config_file), writes it to a file, runs PROGRAM on RANKS ranks with only
# --config FILE --json B, and checks that the two runs' losses and final losses are the same,
# and that the report's configuration is the file --write-config wrote. The rerun's --json
# overrides the file's json key (the command line wins): its report is B, not A.
string(REPLACE "|" ";" COMMAND "${COMMAND}")
file(REMOVE ${A} ${B} ${CONFIG})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${ARGN}\nfailed with status ${status}:\n${out}${err}")
  endif()
endfunction()
run(${COMMAND})
file(READ ${A} first)
string(JSON config GET "${first}" config_file)
file(READ ${CONFIG} written)
string(FIND "${written}" "${config}" at)
if(at EQUAL -1)
  message(SEND_ERROR "--write-config's file does not hold the report's configuration:\n${written}")
endif()
file(WRITE ${FROM_REPORT} "${config}")
run(${MPIEXEC} -n ${RANKS} ${PROGRAM} --config ${FROM_REPORT} --json ${B})
file(READ ${B} second)
foreach(key losses final_loss config_file)
  string(JSON x GET "${first}" ${key})
  string(JSON y GET "${second}" ${key})
  if(key STREQUAL "config_file")  # the same but for where the report went
    string(REPLACE "${A}" "${B}" x "${x}")
  endif()
  if(NOT "${x}" STREQUAL "${y}")
    message(SEND_ERROR "${key} differ: first run '${x}', rerun from its report '${y}'")
  endif()
endforeach()
message(STATUS "rerun from the report: the same losses\n${config}")
