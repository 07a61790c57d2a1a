# Tests of the kiln program (host/): bad input, bit-exact resume, the KV cache, and whole-
# model parity with PyTorch. The shell scripts and the Python script drive the `kiln` binary.
#
# libgomp spins while it waits at a barrier; when ctest runs tests side by side on a small
# machine the spinning threads starve each other (small models slow down tenfold), so
# these tests ask it to sleep instead. Results do not depend on it.
set(_kiln_host_env "OMP_WAIT_POLICY=passive")

# test_host_gpt_units.c is registered by the glob in tests/CMakeLists.txt; it tests host
# code, so it links the host's GPT library.
target_link_libraries(test_host_gpt_units PRIVATE kiln_gpt)
set(_kiln_host_work ${CMAKE_CURRENT_BINARY_DIR}/host_work)

# These scripts train tiny models (dim 8 to 32) whose ops are too small to share between
# threads: one thread keeps them fast under a sanitizer and on a busy machine.
foreach(script bad_input resume decode_cache)
  add_test(NAME host_${script}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_${script}.sh $<TARGET_FILE:kiln_host>
            ${_kiln_host_work}/${script})
  set_tests_properties(host_${script} PROPERTIES LABELS cpu TIMEOUT 300
    ENVIRONMENT "${_kiln_host_env};OMP_NUM_THREADS=1")
endforeach()

# PyTorch parity: Debian's python3 with python3-torch (not a pyenv python on PATH). The
# script exits 77 (skipped) when torch is missing or the backend cannot open here.
find_program(KILN_TORCH_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(KILN_TORCH_PYTHON)
  set(_parity_backends cpu)
  if(KILN_VULKAN)
    list(APPEND _parity_backends vulkan)
  endif()
  if(KILN_OPENCL)
    list(APPEND _parity_backends opencl)
  endif()
  foreach(backend ${_parity_backends})
    set(_name host_gpt_parity)
    if(NOT backend STREQUAL "cpu")
      set(_name host_gpt_parity_${backend})
    endif()
    add_test(NAME ${_name}
      COMMAND ${KILN_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/gpt_parity.py
              --kiln $<TARGET_FILE:kiln_host> --workdir ${_kiln_host_work}/parity_${backend}
              --backend ${backend})
    set(_env "${_kiln_host_env}")
    if(backend STREQUAL "vulkan")
      list(APPEND _env "VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation" "KILN_VK_VALIDATION=fail")
    endif()
    set_tests_properties(${_name} PROPERTIES LABELS ${backend} SKIP_RETURN_CODE 77 TIMEOUT 300
      ENVIRONMENT "${_env}")
  endforeach()
else()
  message(STATUS "kiln: /usr/bin/python3 not found; the PyTorch parity test of the GPT is skipped")
endif()
