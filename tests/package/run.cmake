# tests/package/run.cmake: one package test. Configures, builds and runs the outside project
# consumer/ against trident one way, in a fresh WORK_DIR; fails on any error, on any warning
# (configure or compile), or when the program's output is not the expected one.
#
#   cmake -D MODE=find_package|add_subdirectory|fetchcontent
#         -D TRIDENT_SOURCE_DIR=<trident source> -D TRIDENT_BINARY_DIR=<trident build>
#         -D WORK_DIR=<scratch folder> -D MPIEXEC=<mpiexec> -D BLAS=openblas|blis|eigen
#         [-D NUMPROC_FLAG=-n]
#         [-D GENERATOR=<cmake generator>] [-D MAKE_PROGRAM=...] [-D CXX_COMPILER=...]
#         [-D BUILD_TYPE=Release] -P run.cmake
#
#   find_package      `cmake --install` of TRIDENT_BINARY_DIR into WORK_DIR/prefix, then
#                     find_package(trident) with CMAKE_PREFIX_PATH = that prefix
#   add_subdirectory  add_subdirectory(TRIDENT_SOURCE_DIR)
#   fetchcontent      FetchContent of WORK_DIR/trident-source.tar.gz, an archive made here of
#                     trident's CMakeLists.txt, cmake/ and include/ (no network)
cmake_minimum_required(VERSION 3.20)

foreach(var MODE TRIDENT_SOURCE_DIR TRIDENT_BINARY_DIR WORK_DIR MPIEXEC BLAS)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run.cmake: -D ${var}=... is required")
  endif()
endforeach()
if(NOT NUMPROC_FLAG)
  set(NUMPROC_FLAG -n)
endif()
set(consumer_dir ${CMAKE_CURRENT_LIST_DIR}/consumer)
set(build_dir ${WORK_DIR}/build)

include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)  # run(), tool_args

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# --- how the consumer gets trident ---------------------------------------------------------
# The consumer's GEMM must run on BLAS, the one trident was built with (from source: chosen so).
set(consume_args -D TRIDENT_CONSUME=${MODE})
if(NOT MODE STREQUAL "find_package")
  list(APPEND consume_args -D TRIDENT_BLAS=${BLAS})
endif()
if(MODE STREQUAL "find_package")
  set(prefix ${WORK_DIR}/prefix)
  run("install" ${CMAKE_COMMAND} --install ${TRIDENT_BINARY_DIR} --prefix ${prefix})
  list(APPEND consume_args -D CMAKE_PREFIX_PATH=${prefix} -D CMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
elseif(MODE STREQUAL "add_subdirectory")
  list(APPEND consume_args -D TRIDENT_SOURCE=${TRIDENT_SOURCE_DIR})
elseif(MODE STREQUAL "fetchcontent")
  set(archive ${WORK_DIR}/trident-source.tar.gz)
  run("archive" ${CMAKE_COMMAND} -E chdir ${TRIDENT_SOURCE_DIR}
      ${CMAKE_COMMAND} -E tar czf ${archive} CMakeLists.txt cmake include)
  list(APPEND consume_args -D TRIDENT_ARCHIVE=${archive})
else()
  message(FATAL_ERROR "run.cmake: unknown MODE '${MODE}'")
endif()

# --- configure: no errors, no CMake warnings --------------------------------------------------
if(NOT BUILD_TYPE)
  set(BUILD_TYPE Release)
endif()
run("configure" ${CMAKE_COMMAND} -S ${consumer_dir} -B ${build_dir} ${tool_args}
    -D CMAKE_BUILD_TYPE=${BUILD_TYPE} ${consume_args})
if(output MATCHES "CMake [A-Za-z ]*Warning")
  message(FATAL_ERROR "configure printed a warning:\n${output}")
endif()
if(MODE STREQUAL "find_package")  # the package found must be the one just installed
  file(STRINGS ${build_dir}/CMakeCache.txt found REGEX "^trident_DIR:")
  string(REGEX REPLACE "^[^=]*=" "" found "${found}")
  string(FIND "${found}" "${prefix}/" at)
  if(NOT at EQUAL 0)
    message(FATAL_ERROR "find_package(trident) found '${found}', not the package in ${prefix}")
  endif()
endif()

# --- build: only the consumer's main.cpp is compiled, without warnings ------------------------
run("build" ${CMAKE_COMMAND} --build ${build_dir} --config ${BUILD_TYPE})
if(output MATCHES "[Ww]arning")
  message(FATAL_ERROR "the build printed a warning:\n${output}")
endif()
string(REGEX MATCHALL "Building CXX object" compiled "${output}")
list(LENGTH compiled compiled)
if(compiled GREATER 1)
  message(FATAL_ERROR "expected one compiled file (main.cpp), got ${compiled}:\n${output}")
endif()

# --- run under mpiexec with 2 ranks --------------------------------------------------------
set(program ${build_dir}/trident_consumer)
if(NOT EXISTS ${program})  # multi-configuration generators add a folder per configuration
  set(program ${build_dir}/${BUILD_TYPE}/trident_consumer)
endif()
run("mpiexec" ${MPIEXEC} ${NUMPROC_FLAG} 2 ${program})
message(STATUS "${MODE}: the consumer printed\n${output}")
foreach(rank 0 1)
  if(NOT output MATCHES "TP\\(1\\)-PP\\(1\\)-DP\\(2\\)-Rank\\(${rank}\\): all_reduce ok")
    message(FATAL_ERROR "rank ${rank} did not report a correct all_reduce:\n${output}")
  endif()
  if(NOT output MATCHES "Rank\\(${rank}\\): gemm through ${BLAS} ok")
    message(FATAL_ERROR "rank ${rank} did not report a correct gemm through ${BLAS}:\n${output}")
  endif()
endforeach()
