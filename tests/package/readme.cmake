# tests/package/readme.cmake: the host app of README.md, built from the README's own text
# against the installed package and run, so that the README cannot drift from the API.
#
#   cmake -D README=<README.md> -D TRIDENT_BINARY_DIR=<trident build> -D WORK_DIR=<scratch>
#         -D MPIEXEC=<mpiexec> [-D NUMPROC_FLAG=-n] [-D GENERATOR=...] [-D MAKE_PROGRAM=...]
#         [-D CXX_COMPILER=...] [-D BUILD_TYPE=Release] -P readme.cmake
#
# The app is the ```cpp block after the line "<!-- host app: ... -->", its CMakeLists.txt the
# README's ```cmake block that calls find_package(trident). Built without warnings, it runs
# under mpiexec -n 4 as TP 2 x DP 2, on one rank as TP 1 x DP 1, and under mpiexec -n 4 on the
# emulated device (its backend a type parameter): the loss must fall, and the three runs must
# print the same losses (10 decimals; they differ in summation order only).
cmake_minimum_required(VERSION 3.20)

foreach(var README TRIDENT_BINARY_DIR WORK_DIR MPIEXEC)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "readme.cmake: -D ${var}=... is required")
  endif()
endforeach()
if(NOT NUMPROC_FLAG)
  set(NUMPROC_FLAG -n)
endif()
if(NOT BUILD_TYPE)
  set(BUILD_TYPE Release)
endif()

include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)  # run(), tool_args

# fenced_block(<out> <text> <start>): the first fenced block of `text` that begins with `start`
# (its fence line and what follows), without the fences.
function(fenced_block out text start)
  string(FIND "${text}" "${start}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "README.md has no block that begins with:\n${start}")
  endif()
  string(SUBSTRING "${text}" ${at} -1 rest)
  string(FIND "${rest}" "\n" fence_end)
  math(EXPR fence_end "${fence_end} + 1")
  string(SUBSTRING "${rest}" ${fence_end} -1 rest)
  string(FIND "${rest}" "\n```" end)
  string(SUBSTRING "${rest}" 0 ${end} block)
  set(${out} "${block}\n" PARENT_SCOPE)
endfunction()

file(READ ${README} readme)
string(FIND "${readme}" "<!-- host app:" marker)
if(marker EQUAL -1)
  message(FATAL_ERROR "README.md has no <!-- host app: ... --> line before its host app")
endif()
string(SUBSTRING "${readme}" ${marker} -1 after_marker)
fenced_block(app "${after_marker}" "```cpp")
fenced_block(lists "${readme}" "```cmake\nfind_package(trident")

set(source_dir ${WORK_DIR}/app)
set(build_dir ${WORK_DIR}/build)
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${source_dir})
file(WRITE ${source_dir}/app.cpp "${app}")
file(WRITE ${source_dir}/CMakeLists.txt
     "cmake_minimum_required(VERSION 3.20)\nproject(readme_host_app LANGUAGES CXX)\n"
     "${lists}"
     "target_compile_options(app PRIVATE -Wall -Wextra -Wpedantic)\n")

run("install" ${CMAKE_COMMAND} --install ${TRIDENT_BINARY_DIR} --prefix ${prefix})
run("configure" ${CMAKE_COMMAND} -S ${source_dir} -B ${build_dir} ${tool_args}
    -D CMAKE_BUILD_TYPE=${BUILD_TYPE} -D CMAKE_PREFIX_PATH=${prefix}
    -D CMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run("build" ${CMAKE_COMMAND} --build ${build_dir} --config ${BUILD_TYPE})
if(output MATCHES "[Ww]arning")
  message(FATAL_ERROR "the README's host app built with a warning:\n${output}")
endif()
set(program ${build_dir}/app)
if(NOT EXISTS ${program})
  set(program ${build_dir}/${BUILD_TYPE}/app)
endif()

run("mpiexec -n 4" ${MPIEXEC} ${NUMPROC_FLAG} 4 ${program} 2 2)
set(parallel "${output}")
run("one rank" ${MPIEXEC} ${NUMPROC_FLAG} 1 ${program} 1 1)
set(single "${output}")
run("mpiexec -n 4, emulated device" ${MPIEXEC} ${NUMPROC_FLAG} 4 ${program} 2 2 emulated)
set(emulated "${output}")
message(STATUS "TP 2 x DP 2 printed:\n${parallel}one rank printed:\n${single}"
               "the emulated device printed:\n${emulated}")
string(REGEX MATCHALL "loss [0-9.]+" losses "${parallel}")
list(LENGTH losses count)
if(count LESS 2)
  message(FATAL_ERROR "the host app printed fewer than two losses:\n${parallel}")
endif()
list(GET losses 0 first)
list(GET losses -1 last)
string(REPLACE "loss " "" first "${first}")
string(REPLACE "loss " "" last "${last}")
if(NOT last LESS first)
  message(FATAL_ERROR "the loss did not fall (${first} -> ${last}):\n${parallel}")
endif()
if(NOT parallel STREQUAL single)
  message(FATAL_ERROR "TP 2 x DP 2 and one rank printed different losses")
endif()
if(NOT parallel STREQUAL emulated)
  message(FATAL_ERROR "the CPU and the emulated device printed different losses")
endif()
