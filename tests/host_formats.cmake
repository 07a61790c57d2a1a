# Interop of the host's safetensors code (host/formats/) with the format as the Python
# library writes it (tests/st_write_reference.py; test_host_*.c themselves are registered by
# the glob in tests/CMakeLists.txt). Needs Debian's /usr/bin/python3 with numpy; skipped
# otherwise.
find_program(KILN_SYSTEM_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(KILN_SYSTEM_PYTHON)
  execute_process(COMMAND ${KILN_SYSTEM_PYTHON} -c "import numpy"
    RESULT_VARIABLE _kiln_numpy_rc OUTPUT_QUIET ERROR_QUIET)
endif()
if(KILN_SYSTEM_PYTHON AND _kiln_numpy_rc EQUAL 0)
  set(_st_script ${CMAKE_CURRENT_SOURCE_DIR}/st_write_reference.py)
  set(_st_from_py ${CMAKE_CURRENT_BINARY_DIR}/st_from_python.safetensors)
  set(_st_from_c ${CMAKE_CURRENT_BINARY_DIR}/st_from_c.safetensors)
  # Python writes, kiln reads
  add_test(NAME host_safetensors_python_writes
    COMMAND ${KILN_SYSTEM_PYTHON} ${_st_script} write ${_st_from_py})
  add_test(NAME host_safetensors_kiln_reads
    COMMAND test_host_safetensors --reference ${_st_from_py})
  # kiln writes, Python reads
  add_test(NAME host_safetensors_kiln_writes
    COMMAND test_host_safetensors --write-for-python ${_st_from_c})
  add_test(NAME host_safetensors_python_reads
    COMMAND ${KILN_SYSTEM_PYTHON} ${_st_script} check ${_st_from_c})
  set_tests_properties(host_safetensors_python_writes PROPERTIES FIXTURES_SETUP st_from_py)
  set_tests_properties(host_safetensors_kiln_reads PROPERTIES FIXTURES_REQUIRED st_from_py)
  set_tests_properties(host_safetensors_kiln_writes PROPERTIES FIXTURES_SETUP st_from_c)
  set_tests_properties(host_safetensors_python_reads PROPERTIES FIXTURES_REQUIRED st_from_c)
  set_tests_properties(host_safetensors_python_writes host_safetensors_kiln_reads
    host_safetensors_kiln_writes host_safetensors_python_reads PROPERTIES LABELS cpu TIMEOUT 120)
else()
  message(STATUS "kiln: /usr/bin/python3 with numpy not found; safetensors interop tests skipped")
endif()
