# `kiln` must fail with exactly one line on stderr matching EXPECT:
#   cmake -DCLI=<kiln> "-DARGS=..." -DEXPECT=regex -P kiln_fails_in_one_line.cmake
# (registered by kiln_backend_error_tests in tests/CMakeLists.txt)
execute_process(COMMAND ${CLI} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(STRIP "${err}" err)
if(rc EQUAL 0)
  message(FATAL_ERROR "kiln ${ARGS} succeeded; expected an error")
endif()
if(err MATCHES "\n" OR NOT err MATCHES "${EXPECT}")
  message(FATAL_ERROR "kiln ${ARGS}: expected one line matching '${EXPECT}' on stderr, got:\n${err}")
endif()
