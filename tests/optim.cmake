# The optimizer against torch.optim: tests/optim_reference.py prints AdamW/Adam trajectories
# (Debian's /usr/bin/python3 has torch), test_op_optim replays them. Skipped (77) when torch
# is missing.
set(KILN_OPTIM_REFERENCE_PY ${CMAKE_CURRENT_SOURCE_DIR}/optim_reference.py)
set(KILN_OPTIM_REFERENCE_BACKENDS cpu)
if(KILN_VULKAN)
  list(APPEND KILN_OPTIM_REFERENCE_BACKENDS vulkan)
endif()
if(KILN_OPENCL)
  list(APPEND KILN_OPTIM_REFERENCE_BACKENDS opencl)
endif()
foreach(backend ${KILN_OPTIM_REFERENCE_BACKENDS})
  set(out ${CMAKE_CURRENT_BINARY_DIR}/optim_reference_${backend}.txt)
  add_test(NAME optim_torch_reference_${backend}
    COMMAND sh -c "/usr/bin/python3 '${KILN_OPTIM_REFERENCE_PY}' > '${out}' && '$<TARGET_FILE:test_op_optim>' --backend ${backend} --torch-reference '${out}'")
  set_tests_properties(optim_torch_reference_${backend} PROPERTIES LABELS ${backend} SKIP_RETURN_CODE 77 TIMEOUT 120)
endforeach()
