# Writes generated/build_info.hpp at build time (cmake -P), so the binary reports the commit it
# was built from, not the one of an older configure; "-dirty" marks uncommitted changes to tracked
# files. configure_file leaves an unchanged file untouched: an unchanged commit rebuilds nothing.
# Inputs (-D): SRC (source dir), OUT (header path), PROJECT_VERSION, CMAKE_BUILD_TYPE,
# CMAKE_CXX_COMPILER_ID, CMAKE_CXX_COMPILER_VERSION, CMAKE_CUDA_COMPILER_VERSION, DECODEBENCH_PROBE
# (empty, or a probe build's setting, e.g. DECODEBENCH_X_DIGITS=1: named in the build type).
execute_process(COMMAND git rev-parse --short=12 HEAD
                WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE DECODEBENCH_GIT_SHA OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET)
if(NOT DECODEBENCH_GIT_SHA)
  set(DECODEBENCH_GIT_SHA "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no
                  WORKING_DIRECTORY ${SRC}
                  OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(dirty)
    string(APPEND DECODEBENCH_GIT_SHA "-dirty")
  endif()
endif()
if(DECODEBENCH_PROBE)
  string(APPEND CMAKE_BUILD_TYPE " (probe build: ${DECODEBENCH_PROBE})")
endif()
set(DECODEBENCH_PROBE_NOTE "${DECODEBENCH_PROBE}")
set(CMAKE_SOURCE_DIR ${SRC})
configure_file(${SRC}/core/build_info.hpp.in ${OUT} @ONLY)
