# OpenCL-specific test registrations (included by tests/CMakeLists.txt), and, when run as
# `cmake -P tests/opencl.cmake`, the oclgrind runner those registrations use.
#
#   label opencl    test_opencl_*.c (listing, errors, binary cache, memory, f16 storage, the
#                   GEMM variants) on the real OpenCL device (PoCL here).
#   label oclgrind  every test_op_*, test_opencl_gemm and test_opencl_kernels_f16 (the f16 variant
#                   of every kernel) under oclgrind with API, out-of-bounds,
#                   data-race and uninitialized-value checks; any oclgrind message fails the
#                   test. KILN_CL_MAX_BUFFER keeps buffers small, because oclgrind's
#                   data-race bookkeeping costs time proportional to the size of every buffer
#                   a kernel touches, and kiln's buffers are large blocks (5 MiB: ~1 s per op
#                   instead of ~20 s; the largest test tensor is 4.2 MB). One oclgrind worker thread: with several, its checkers
#                   occasionally corrupted the heap at exit ("corrupted double-linked list")
#                   on this 2-core machine, and CTest runs tests in parallel anyway.
#
# Check forks a child per test by default; OpenCL drivers (PoCL's worker threads) do not
# survive fork() after the parent has opened a platform, which kt_main does to probe the
# backend. The OpenCL registrations therefore run with CK_FORK=no.

if(CMAKE_SCRIPT_MODE_FILE AND CLI)
  # ---- `kiln` must fail with exactly one line on stderr matching EXPECT:
  #      cmake -DCLI=<kiln> "-DARGS=..." -DEXPECT=regex -P opencl.cmake ----
  execute_process(COMMAND ${CLI} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(STRIP "${err}" err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "kiln ${ARGS} succeeded; expected an error")
  endif()
  if(err MATCHES "\n" OR NOT err MATCHES "${EXPECT}")
    message(FATAL_ERROR "kiln ${ARGS}: expected one line matching '${EXPECT}' on stderr, got:\n${err}")
  endif()
  return()
elseif(CMAKE_SCRIPT_MODE_FILE)
  # ---- runner: cmake -DOCLGRIND=... -DTEST=... -DLOG=... -P opencl.cmake ----
  file(REMOVE ${LOG})
  execute_process(
    COMMAND ${OCLGRIND} --check-api --data-races --uninitialized --max-errors 50 --num-threads 1
            --log ${LOG}
            ${TEST} --backend opencl ${ARGS}
    RESULT_VARIABLE rc)
  set(log "")
  if(EXISTS ${LOG})
    file(READ ${LOG} log)
  endif()
  if(log MATCHES "[^ \t\r\n]")
    message(FATAL_ERROR "oclgrind reported errors (${LOG}):\n${log}")
  endif()
  if(rc EQUAL 77)
    message("KILN_TEST_SKIPPED: the opencl backend is not available under oclgrind")
  elseif(NOT rc EQUAL 0)
    message(FATAL_ERROR "${TEST} failed under oclgrind (exit ${rc})")
  endif()
  return()
endif()

# ---- registrations ----
foreach(src ${KILN_TEST_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  if(name MATCHES "^test_opencl_")
    # backend-specific tests: they include the backend's private header
    if(KILN_OPENCL)
      target_compile_definitions(${name} PRIVATE KILN_HAVE_OPENCL)
      target_link_libraries(${name} PRIVATE OpenCL::OpenCL)
      set_tests_properties(${name} PROPERTIES LABELS opencl)
    endif()
  endif()
endforeach()

# CK_FORK=no on every test labelled opencl, including those registered by files included
# after this one: deferred to the end of this directory.
function(kiln_opencl_no_fork)
  get_property(tests DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} PROPERTY TESTS)
  foreach(t ${tests})
    get_test_property(${t} LABELS labels)
    if(labels AND "opencl" IN_LIST labels)
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "CK_FORK=no")
    endif()
  endforeach()
endfunction()
if(KILN_OPENCL)
  cmake_language(DEFER CALL kiln_opencl_no_fork)
endif()

if(KILN_OPENCL)
  # the error paths that need a process of their own (the ICD loader reads
  # OCL_ICD_VENDORS once per process)
  add_test(NAME test_opencl_device_no_platform COMMAND test_opencl_device --expect-no-platform)
  set_tests_properties(test_opencl_device_no_platform PROPERTIES LABELS opencl
    ENVIRONMENT "OCL_ICD_VENDORS=/nonexistent")

  # the `kiln` program: a missing device or platform is one line on stderr and exit 1
  if(TARGET kiln_host)
    add_test(NAME kiln_opencl_missing_device
      COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:kiln_host>
              "-DARGS=bench;gemm;--backend;opencl;--device;9;--sizes;8;--repeat;1"
              "-DEXPECT=opencl:9 does not exist" -P ${CMAKE_CURRENT_LIST_FILE})
    add_test(NAME kiln_opencl_no_platform
      COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:kiln_host>
              "-DARGS=bench;gemm;--backend;opencl;--sizes;8;--repeat;1"
              "-DEXPECT=no OpenCL platform found" -P ${CMAKE_CURRENT_LIST_FILE})
    set_tests_properties(kiln_opencl_missing_device PROPERTIES LABELS opencl)
    set_tests_properties(kiln_opencl_no_platform PROPERTIES LABELS opencl
      ENVIRONMENT "OCL_ICD_VENDORS=/nonexistent")
  endif()

  find_program(KILN_OCLGRIND oclgrind)
  if(KILN_OCLGRIND)
    foreach(src ${KILN_TEST_SOURCES})
      get_filename_component(name ${src} NAME_WE)
      if(name MATCHES "^test_op_" OR name STREQUAL "test_opencl_gemm" OR name STREQUAL "test_opencl_kernels_f16")
        add_test(NAME ${name}_oclgrind
          COMMAND ${CMAKE_COMMAND} -DOCLGRIND=${KILN_OCLGRIND} -DTEST=$<TARGET_FILE:${name}>
                  -DLOG=${CMAKE_CURRENT_BINARY_DIR}/${name}.oclgrind.log
                  -P ${CMAKE_CURRENT_LIST_FILE})
        set_tests_properties(${name}_oclgrind PROPERTIES LABELS oclgrind TIMEOUT 900
          SKIP_REGULAR_EXPRESSION "KILN_TEST_SKIPPED"
          ENVIRONMENT "CK_FORK=no;KILN_CL_MAX_BUFFER=5242880")
      endif()
    endforeach()
  else()
    message(STATUS "kiln: oclgrind not found: no oclgrind tests (apt install oclgrind)")
  endif()
endif()
