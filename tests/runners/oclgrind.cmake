# A test program under oclgrind, with API, out-of-bounds, data-race and uninitialized-value
# checks; any oclgrind message fails the test (registered by tests/opencl.cmake):
#   cmake -DOCLGRIND=<oclgrind> -DTEST=<program> -DLOG=<file> -P oclgrind.cmake
# One oclgrind worker thread: with several, its checkers occasionally corrupted the heap at
# exit ("corrupted double-linked list") on a 2-core machine, and CTest runs tests in
# parallel anyway.
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
