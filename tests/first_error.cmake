# Builds TARGET in BUILD_DIR and passes when the build fails and its first "error:" line
# contains EXPECT: a compile-time check that speaks before the compiler's own errors.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${TARGET}
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(status EQUAL 0)
  message(FATAL_ERROR "${TARGET} compiled; it must not")
endif()
string(REGEX MATCH "[^\n]*error:[^\n]*" first "${out}${err}")
message("first error: ${first}")
string(FIND "${first}" "${EXPECT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the first error is not '${EXPECT}':\n${out}${err}")
endif()
