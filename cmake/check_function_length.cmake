# cmake/check_function_length.cmake: no function over LIMIT lines (issue 16: small functions).
#
#   cmake -DROOT=<source dir> [-DLIMIT=60] -P cmake/check_function_length.cmake
#
# Reads the clang-formatted sources under include/, examples/, bench/, instances/ and tests/. A
# function is a line at indent 0 or 2 that ends in "{", holds a ")" and is no namespace, type or
# control statement, up to the next line that is "}" at the same indent; a lambda inside a
# function counts with it. Every function longer than LIMIT lines is printed (file, line, length)
# and the check fails, unless it is listed below with its reason. A listed one that has come under
# the limit is reported, so the list can shrink.
cmake_policy(SET CMP0007 NEW)  # lists keep empty elements
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source dir> [-DLIMIT=60] -P check_function_length.cmake")
endif()
if(NOT LIMIT)
  set(LIMIT 60)
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)

# file:name of each function that may be longer, with its reason above it.
set(exceptions)  # none today; each entry "file:name" with its reason above it

file(GLOB_RECURSE sources RELATIVE "${ROOT}" "${ROOT}/include/*.hpp" "${ROOT}/examples/*.cpp"
     "${ROOT}/examples/*.hpp" "${ROOT}/bench/*.cpp" "${ROOT}/bench/*.hpp" "${ROOT}/tests/*.cpp"
     "${ROOT}/tests/*.hpp" "${ROOT}/include/*.cuh" "${ROOT}/tests/*.cu" "${ROOT}/instances/*.cpp"
     "${ROOT}/instances/*.hpp")
list(FILTER sources EXCLUDE REGEX "^tests/(layering|function_length)/")
if(NOT sources)
  message(FATAL_ERROR "no sources under ${ROOT}: nothing to check")
endif()
set(too_long 0)
set(excused "")
foreach(f IN LISTS sources)
  file(READ "${ROOT}/${f}" content)
  # one list element per line: ';' and the brackets would split or join elements (';' becomes
  # ':', so a declaration ends in ':' below, and "};" reads "}:")
  string(REPLACE ";" ":" content "${content}")
  string(REPLACE "[" "(" content "${content}")
  string(REPLACE "]" ")" content "${content}")
  string(REPLACE "\\" "/" content "${content}")
  string(REPLACE "\n" ";" lines "${content}")
  set(n 0)
  set(inside FALSE)   # in a function whose first line has the indent `open`
  set(pending FALSE)  # in a signature over several lines
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(NOT inside AND NOT pending)
      if(line MATCHES "^(  )?[A-Za-z_].*(\\).*{|[(,])$"
         AND NOT line MATCHES "^ *(namespace|struct|class|enum|union|if|for|while|switch|else|do|try|catch|return|extern|static_assert|using|typedef)[ ({]"
         AND NOT line MATCHES "^[^(]* = ")
        set(open "")
        if(line MATCHES "^  ")
          set(open "  ")
        endif()
        set(start ${n})
        set(head "${line}")
        if(line MATCHES "{$")
          set(inside TRUE)
        else()
          set(pending TRUE)
        endif()
      endif()
    elseif(pending)
      if(line MATCHES "{$")
        set(pending FALSE)
        set(inside TRUE)
      elseif(line MATCHES ":$" OR line MATCHES "^${open}[^ ]")
        set(pending FALSE)  # a declaration or a statement (its ";" reads ":"), not a definition
      endif()
    elseif(line STREQUAL "${open}}" OR line STREQUAL "${open}}:" OR line STREQUAL "${open}}):")
      math(EXPR length "${n} - ${start} + 1")
      string(REGEX MATCH "([A-Za-z_0-9]+)\\(" _ "${head}")
      set(name "${CMAKE_MATCH_1}")
      if(length GREATER LIMIT)
        list(FIND exceptions "${f}:${name}" listed)
        if(listed LESS 0)
          message(SEND_ERROR "${f}:${start}: ${name}() is ${length} lines, over ${LIMIT}:\n"
                             "  ${head}\n  split it into named steps")
          math(EXPR too_long "${too_long} + 1")
        else()
          list(APPEND excused "${f}:${name}")
        endif()
      endif()
      set(inside FALSE)
    endif()
  endforeach()
endforeach()
foreach(e IN LISTS exceptions)
  list(FIND excused "${e}" at)
  if(at LESS 0)
    message(STATUS "${e} is listed as an exception but is no longer over ${LIMIT} lines: "
                   "take it off the list")
  endif()
endforeach()
if(too_long GREATER 0)
  message(FATAL_ERROR "${too_long} function(s) over ${LIMIT} lines")
endif()
list(LENGTH sources count)
message(STATUS "no function over ${LIMIT} lines in ${count} files (listed exceptions aside)")
