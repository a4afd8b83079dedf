# cmake/check_layers.cmake: the layering of include/trident, checked.
#
#   cmake -DROOT=<source dir> -P cmake/check_layers.cmake
#
# docs/ARCHITECTURE.md writes the order of the folders, low to high, on one line that starts
# with "layers (low to high):". A header (.hpp, .cuh, .cu) may include headers of its own folder
# and of folders below it, never above: every upward include, written either way ("../x.hpp"
# relative to the header, or <trident/x.hpp>), is printed (file, line, the include, both
# layers) and the check fails. Headers directly in include/trident (the umbrella) may include
# anything; a folder missing from the written order is an error too, so a new folder must be
# placed before it can be used.
cmake_policy(SET CMP0007 NEW)  # lists keep empty elements
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source dir> -P check_layers.cmake")
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)
file(STRINGS "${ROOT}/docs/ARCHITECTURE.md" order_line REGEX "^layers \\(low to high\\):")
if(NOT order_line)
  message(FATAL_ERROR "docs/ARCHITECTURE.md has no line 'layers (low to high): ...'")
endif()
string(REGEX REPLACE "^layers \\(low to high\\):[ ]*" "" order "${order_line}")
string(REGEX REPLACE "[` ]+" ";" order "${order}")
list(FILTER order EXCLUDE REGEX "^$")

set(base "${ROOT}/include/trident")
file(GLOB_RECURSE headers RELATIVE "${base}" "${base}/*.hpp" "${base}/*.cuh" "${base}/*.cu")
if(NOT headers)
  message(FATAL_ERROR "no headers under ${base}: nothing to check")
endif()
set(violations 0)
foreach(h IN LISTS headers)
  if(NOT h MATCHES "/")
    continue()  # the umbrella headers sit above every layer
  endif()
  string(REGEX MATCH "^[^/]+" from "${h}")
  list(FIND order "${from}" from_rank)
  if(from_rank LESS 0)
    message(SEND_ERROR "include/trident/${h}: its folder '${from}' is not in the written order")
    math(EXPR violations "${violations} + 1")
    continue()
  endif()
  get_filename_component(dir "${h}" DIRECTORY)
  # only the include lines (a whole file read as a CMake list would split on ';' and '[')
  file(READ "${base}/${h}" content)
  file(STRINGS "${base}/${h}" lines REGEX "^#include (\"|<trident/)")
  foreach(line IN LISTS lines)
    if(line MATCHES "^#include <trident/([^>]+)>")
      set(target "${base}/${CMAKE_MATCH_1}")  # from the include root
    else()
      string(REGEX MATCH "^#include \"([^\"]+)\"" _ "${line}")
      set(target "${base}/${dir}/${CMAKE_MATCH_1}")  # relative to the header
    endif()
    get_filename_component(target "${target}" ABSOLUTE)
    file(RELATIVE_PATH target "${base}" "${target}")
    string(REGEX MATCH "^[^/]+" to "${target}")
    if(NOT target MATCHES "/")
      set(to "")  # an umbrella header: above everything
    endif()
    list(FIND order "${to}" to_rank)
    if(to STREQUAL "" OR to_rank GREATER from_rank)
      string(FIND "${content}" "${line}" at)
      string(SUBSTRING "${content}" 0 ${at} before)
      string(REGEX MATCHALL "\n" newlines "${before}")
      list(LENGTH newlines n)
      math(EXPR n "${n} + 1")
      message(SEND_ERROR "include/trident/${h}:${n}: ${line}\n"
                         "  '${from}' (layer ${from_rank}) includes '${to}' above it")
      math(EXPR violations "${violations} + 1")
    endif()
  endforeach()
endforeach()
if(violations GREATER 0)
  message(FATAL_ERROR "${violations} include(s) break the layering of docs/ARCHITECTURE.md")
endif()
list(LENGTH headers count)
string(REPLACE ";" " < " shown "${order}")
message(STATUS "layering holds for ${count} headers: ${shown}")
