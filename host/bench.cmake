# The `kiln bench` commands (host/bench*.c, see host/bench.h), included by host/CMakeLists.txt.
# OpenBLAS (cblas_sgemm) is the CPU peer of `bench gemm` and the cross-check of the f32 FMA
# ceiling in `kiln bench`; CLBlast is the OpenCL peer of `bench gemm`. Both are linked to the
# kiln program only, never to libkiln.
target_sources(kiln_host PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/bench_gemm.c
  ${CMAKE_CURRENT_LIST_DIR}/bench_run.c
  ${CMAKE_CURRENT_LIST_DIR}/bench_ceilings.c
  ${CMAKE_CURRENT_LIST_DIR}/bench_kernels.c
  ${CMAKE_CURRENT_LIST_DIR}/bench_model.c
  ${CMAKE_CURRENT_LIST_DIR}/bench_report.c
  ${CMAKE_CURRENT_LIST_DIR}/bench_json.c
  ${CMAKE_CURRENT_LIST_DIR}/bench_compare.c)
target_compile_definitions(kiln_host PRIVATE KILN_HAVE_BENCH)

# The commit a result file names: read at configure time, and the configure step re-runs
# when HEAD moves (a commit, a checkout), so a rebuild never reports a stale commit.
set(KILN_GIT_COMMIT "unknown")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS ${PROJECT_SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse HEAD
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE _kiln_commit
    RESULT_VARIABLE _kiln_git_rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_kiln_git_rc EQUAL 0)
    set(KILN_GIT_COMMIT ${_kiln_commit})
  endif()
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --symbolic-full-name HEAD
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE _kiln_ref
    RESULT_VARIABLE _kiln_git_rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/.git/HEAD)
  if(_kiln_git_rc EQUAL 0 AND EXISTS ${PROJECT_SOURCE_DIR}/.git/${_kiln_ref})
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/.git/${_kiln_ref})
  endif()
endif()
# only the files that print it, so a new commit recompiles two files, not the program
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/bench_run.c ${CMAKE_CURRENT_LIST_DIR}/bench_json.c
  PROPERTIES COMPILE_DEFINITIONS "KILN_GIT_COMMIT=\"${KILN_GIT_COMMIT}\"")

find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(KILN_OPENBLAS QUIET IMPORTED_TARGET openblas)
endif()
if(KILN_OPENBLAS_FOUND)
  target_link_libraries(kiln_host PRIVATE PkgConfig::KILN_OPENBLAS)
  target_compile_definitions(kiln_host PRIVATE KILN_BENCH_OPENBLAS)
else()
  # any CBLAS that find_package(BLAS) finds, when its cblas.h is on the include path
  find_package(BLAS QUIET)
  include(CheckIncludeFile)
  check_include_file(cblas.h KILN_HAVE_CBLAS_H)
  if(BLAS_FOUND AND KILN_HAVE_CBLAS_H)
    target_link_libraries(kiln_host PRIVATE ${BLAS_LIBRARIES})
    target_compile_definitions(kiln_host PRIVATE KILN_BENCH_OPENBLAS)
  else()
    message(STATUS "kiln: bench gemm without a BLAS peer (install libopenblas-dev)")
  endif()
endif()

if(KILN_OPENCL)
  find_package(CLBlast QUIET)
  if(CLBlast_FOUND)
    target_link_libraries(kiln_host PRIVATE clblast OpenCL::OpenCL)
    target_compile_definitions(kiln_host PRIVATE KILN_BENCH_CLBLAST)
  else()
    message(STATUS "kiln: bench gemm without CLBlast (install libclblast-dev)")
  endif()
endif()
