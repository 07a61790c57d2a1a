# Rotary embeddings against the models' own formulations: tests/rope_reference.py prints
# Hugging Face's rotate_half and Meta's complex-number rope in float64 (Debian's
# /usr/bin/python3 has torch), test_op_rope compares forward and gradient on each backend.
# Skipped (77) when torch is missing.
set(KILN_ROPE_REFERENCE_PY ${CMAKE_CURRENT_SOURCE_DIR}/rope_reference.py)
set(KILN_ROPE_REFERENCE_BACKENDS cpu)
if(KILN_VULKAN)
  list(APPEND KILN_ROPE_REFERENCE_BACKENDS vulkan)
endif()
if(KILN_OPENCL)
  list(APPEND KILN_ROPE_REFERENCE_BACKENDS opencl)
endif()
foreach(backend ${KILN_ROPE_REFERENCE_BACKENDS})
  set(out ${CMAKE_CURRENT_BINARY_DIR}/rope_reference_${backend}.txt)
  add_test(NAME rope_torch_reference_${backend}
    COMMAND sh -c "/usr/bin/python3 '${KILN_ROPE_REFERENCE_PY}' > '${out}' && '$<TARGET_FILE:test_op_rope>' --backend ${backend} --torch-reference '${out}'")
  set_tests_properties(rope_torch_reference_${backend} PROPERTIES LABELS ${backend} SKIP_RETURN_CODE 77 TIMEOUT 120)
endforeach()
