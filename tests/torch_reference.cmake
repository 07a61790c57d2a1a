# Ops against PyTorch: a script of tests/ prints the reference in float64 (Debian's
# /usr/bin/python3 has torch), and an op test replays it with --torch-reference FILE, on
# every backend this build has (KILN_TEST_BACKENDS), as <name>_torch_reference_<backend>.
# Skipped (77) when torch is missing.
function(kiln_torch_reference name program script)
  foreach(backend ${KILN_TEST_BACKENDS})
    set(out ${CMAKE_CURRENT_BINARY_DIR}/${name}_reference_${backend}.txt)
    add_test(NAME ${name}_torch_reference_${backend}
      COMMAND sh -c "/usr/bin/python3 '${CMAKE_CURRENT_SOURCE_DIR}/${script}' > '${out}' && '$<TARGET_FILE:${program}>' --backend ${backend} --torch-reference '${out}'")
    set_tests_properties(${name}_torch_reference_${backend} PROPERTIES LABELS ${backend} SKIP_RETURN_CODE 77 TIMEOUT 120)
  endforeach()
endfunction()

# torch.optim's AdamW/Adam trajectories (tests/optim_reference.py)
kiln_torch_reference(optim test_op_optim optim_reference.py)
# Hugging Face's rotate_half (with Llama 3's rope scaling) and Meta's complex-number rope
# (tests/rope_reference.py)
kiln_torch_reference(rope test_op_rope rope_reference.py)
