# `kiln bench gemm` (host/bench_gemm.c), included by host/CMakeLists.txt.
# OpenBLAS (cblas_sgemm) is the CPU peer and CLBlast the OpenCL peer. Both are linked to the
# kiln program only, never to libkiln.
target_sources(kiln_host PRIVATE ${CMAKE_CURRENT_LIST_DIR}/bench_gemm.c)

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
