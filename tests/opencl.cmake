# OpenCL test registrations (included by tests/CMakeLists.txt).
#
#   label opencl    every op test, test_loss_scale and test_probe on OpenCL; the devices,
#                   memory and GEMM variants (test_gpu_*.c as test_opencl_*) and OpenCL's own
#                   tests (test_opencl_*.c: the binary cache, f16 storage, the f16 variant of
#                   every kernel); the errors for a missing device or platform, from the
#                   library and the `kiln` program; test_op_attention again with 4-row tiles
#                   (KILN_CL_ATTN_TILE); all on the real OpenCL device (PoCL here).
#   label oclgrind  every test_op_*, test_opencl_gemm and test_opencl_kernels_f16 (the f16 variant
#                   of every kernel) under oclgrind (tests/runners/oclgrind.cmake); any oclgrind
#                   message fails the test. KILN_CL_MAX_BUFFER keeps buffers small, because
#                   oclgrind's data-race bookkeeping costs time proportional to the size of every
#                   buffer a kernel touches, and kiln's buffers are large blocks (5 MiB: ~1 s per
#                   op instead of ~20 s; the largest test tensor is 4.2 MB).
#
# Check forks a child per test by default; OpenCL drivers (PoCL's worker threads) do not
# survive fork() after the parent has opened a platform, which kt_main does to probe the
# backend. The OpenCL registrations therefore run with CK_FORK=no.
if(NOT KILN_OPENCL)
  return()
endif()

# backend-specific tests include the backend's private header
kiln_backend_tests(opencl LINK OpenCL::OpenCL)

# the fused attention with 4-row tiles: the op's cases, whose sequences are shorter than a
# tile of the device's size (cl_attention.c), then run over many query and key tiles
kiln_backend_test(test_op_attention_opencl_tile4 test_op_attention opencl ENV KILN_CL_ATTN_TILE=4)

cmake_language(DEFER CALL kiln_no_fork opencl)

# the ICD loader reads OCL_ICD_VENDORS once per process
kiln_backend_error_tests(opencl DEVICE 9 NO_DRIVER no_platform ERROR "no OpenCL platform found"
  HIDE OCL_ICD_VENDORS=/nonexistent)

find_program(KILN_OCLGRIND oclgrind)
if(KILN_OCLGRIND)
  foreach(stem ${KILN_OP_TESTS} test_opencl_gemm test_opencl_kernels_f16)
    kiln_backend_command(${stem} opencl command)
    list(GET command 0 program)
    add_test(NAME ${stem}_oclgrind
      COMMAND ${CMAKE_COMMAND} -DOCLGRIND=${KILN_OCLGRIND} -DTEST=$<TARGET_FILE:${program}>
              -DLOG=${CMAKE_CURRENT_BINARY_DIR}/${stem}.oclgrind.log
              -P ${CMAKE_CURRENT_SOURCE_DIR}/runners/oclgrind.cmake)
    # KT_GEMM_VARIANTS=0: the matmul cases with the device's own GEMM only; every GEMM
    # variant meets oclgrind in test_opencl_gemm (four times the products made the matmul
    # cases run past the timeout). KT_OCLGRIND=1: loop tests too long for oclgrind's checks
    # run a representative subset of their indices (test_op_quant's transposed product).
    # KILN_CL_ATTN_TILE=4: the fused attention over many tiles, so that oclgrind sees the
    # barriers between them
    set_tests_properties(${stem}_oclgrind PROPERTIES LABELS oclgrind TIMEOUT 900
      SKIP_REGULAR_EXPRESSION "KILN_TEST_SKIPPED"
      ENVIRONMENT "CK_FORK=no;KILN_CL_MAX_BUFFER=5242880;KT_GEMM_VARIANTS=0;KT_OCLGRIND=1;KILN_CL_ATTN_TILE=4")
  endforeach()
else()
  message(STATUS "kiln: oclgrind not found: no oclgrind tests (apt install oclgrind)")
endif()
