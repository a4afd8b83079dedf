# The BLAS behind backend::gemm (include/trident/backend/cpu/blas.hpp).
#
# trident_find_blas(<kind> <result>): kind is openblas, blis or eigen. Defines the imported
# target trident::blas (the library and its cblas header) and sets <result>
# to the kind found, or to "" when that BLAS is not installed. eigen needs nothing: Eigen's own
# GEMM. Used by CMakeLists.txt at configure time and again by the installed tridentConfig.cmake,
# so that a consumer links the BLAS trident was built with.
function(trident_find_blas kind result)
  set(${result} "" PARENT_SCOPE)
  if(kind STREQUAL "eigen")
    set(${result} eigen PARENT_SCOPE)
    return()
  endif()
  # Debian keeps each threading variant in its own folder (openblas-pthread, blis-openmp, ...).
  set(variants pthread openmp serial)
  if(kind STREQUAL "openblas")
    set(header cblas.h)
    set(marker openblas_config.h)
    set(library openblas)
  elseif(kind STREQUAL "blis")
    set(header blis.h)
    set(marker blis.h)
    set(library blis)
  else()
    message(FATAL_ERROR "TRIDENT_BLAS: unknown BLAS '${kind}' (auto, openblas, blis or eigen)")
  endif()
  set(suffixes ${kind})
  foreach(v IN LISTS variants)
    list(APPEND suffixes ${kind}-${v})
  endforeach()
  find_path(TRIDENT_${kind}_INCLUDE_DIR NAMES ${marker} PATH_SUFFIXES ${suffixes})
  find_library(TRIDENT_${kind}_LIBRARY NAMES ${library} PATH_SUFFIXES ${suffixes})
  mark_as_advanced(TRIDENT_${kind}_INCLUDE_DIR TRIDENT_${kind}_LIBRARY)
  if(NOT TRIDENT_${kind}_INCLUDE_DIR OR NOT TRIDENT_${kind}_LIBRARY
     OR NOT EXISTS "${TRIDENT_${kind}_INCLUDE_DIR}/${header}")
    return()
  endif()
  if(NOT TARGET trident::blas)
    add_library(trident::blas INTERFACE IMPORTED GLOBAL)
    set_target_properties(trident::blas PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${TRIDENT_${kind}_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${TRIDENT_${kind}_LIBRARY}")
  endif()
  set(${result} ${kind} PARENT_SCOPE)
endfunction()
