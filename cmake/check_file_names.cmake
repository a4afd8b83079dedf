# cmake/check_file_names.cmake: every file a comment or a document names exists.
#
#   cmake -DROOT=<source dir> -P cmake/check_file_names.cmake
#
# Reads the sources, scripts and documents under ROOT (include, instances, examples, bench,
# tests, cmake, docs, .ci and the top level) for names of source files with a folder, such as
# `train/report.hpp` or `cli/run_steps.cmake` (extensions hpp, cpp, cuh, cu, cmake, md, sh, py),
# and fails on every one that no file under ROOT ends with: a comment that cites a file renamed
# or removed since. #include lines are the compiler's to check; names after a variable
# (`${dir}/x.cmake`, `%s/x.sh`), inside <...> or starting with ../ (relative to a header, or
# outside the tree) are not names of this tree's files.
cmake_policy(SET CMP0007 NEW)
cmake_policy(SET CMP0057 NEW)
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source dir> -P check_file_names.cmake")
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)
set(folders include instances examples bench tests cmake docs .ci)
set(patterns "")
foreach(folder IN LISTS folders)
  foreach(ext hpp cpp cuh cu cmake md sh py txt in run)
    list(APPEND patterns "${ROOT}/${folder}/*.${ext}")
  endforeach()
endforeach()
file(GLOB_RECURSE files RELATIVE "${ROOT}" ${patterns})
file(GLOB top RELATIVE "${ROOT}" "${ROOT}/*.md" "${ROOT}/CMakeLists.txt" "${ROOT}/.ci/run")
list(APPEND files ${top})
list(FILTER files EXCLUDE REGEX "^tests/file_names/")  # this check's fixture
list(REMOVE_DUPLICATES files)
# every file of the tree, to find a name's file by its ending: "|/README.md|/cmake/cluster.sh|"
file(GLOB_RECURSE tree RELATIVE "${ROOT}" LIST_DIRECTORIES false "${ROOT}/*")
list(FILTER tree EXCLUDE REGEX "^(\\.git|build)/")
string(REPLACE ";" "|/" tree "|/${tree}|")

set(named "[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+\\.(hpp|cpp|cuh|cu|cmake|md|sh|py)(\\.in)?")
set(missing 0)
foreach(f IN LISTS files)
  file(STRINGS "${ROOT}/${f}" lines REGEX "/[A-Za-z0-9_.-]+\\.(hpp|cpp|cuh|cu|cmake|md|sh|py)")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[ ]*#[ ]*include")
      continue()
    endif()
    string(REGEX REPLACE "(\\$[{(]?[A-Za-z_]+[})]?\"?|%s)/[A-Za-z0-9_./-]*" " " line "${line}")
    string(REGEX REPLACE "(^|[^A-Za-z0-9_.-])\\.\\./[A-Za-z0-9_./-]*" " " line "${line}")
    string(REGEX REPLACE "<[^<>]*>" " " line "${line}")
    string(REGEX MATCHALL "${named}" names "${line}")
    foreach(name IN LISTS names)
      string(REGEX REPLACE "^\\./" "" name "${name}")
      string(FIND "${tree}" "/${name}|" at)
      if(at EQUAL -1)
        message(SEND_ERROR "${f}: names ${name}, which is not a file of this tree")
        math(EXPR missing "${missing} + 1")
      endif()
    endforeach()
  endforeach()
endforeach()
if(missing GREATER 0)
  message(FATAL_ERROR "${missing} name(s) of files that do not exist")
endif()
list(LENGTH files count)
message(STATUS "every file named in ${count} files exists")
