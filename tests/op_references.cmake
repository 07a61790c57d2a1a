# Ops against what others wrote: a script of tests/ prints a reference (PyTorch in float64
# through Debian's /usr/bin/python3, or llama.cpp's ggml through node-llama-cpp's libraries
# under $KILN_NODE_PEERS), and an op test replays it with FLAG FILE, on every backend this
# build has (KILN_TEST_BACKENDS), as <name>_reference_<backend>. Skipped (77) when the
# script's peer is missing (the script says which in one line).
function(kiln_op_reference name program script flag)
  foreach(backend ${KILN_TEST_BACKENDS})
    set(out ${CMAKE_CURRENT_BINARY_DIR}/${name}_reference_${backend}.txt)
    add_test(NAME ${name}_reference_${backend}
      COMMAND sh -c "/usr/bin/python3 '${CMAKE_CURRENT_SOURCE_DIR}/${script}' > '${out}' && '$<TARGET_FILE:${program}>' --backend ${backend} ${flag} '${out}'")
    set_tests_properties(${name}_reference_${backend} PROPERTIES LABELS ${backend} SKIP_RETURN_CODE 77 TIMEOUT 120)
  endforeach()
endfunction()

# torch.optim's AdamW/Adam trajectories (tests/optim_reference.py)
kiln_op_reference(optim_torch test_op_optim optim_reference.py --torch-reference)
# Hugging Face's rotate_half (with Llama 3's rope scaling) and Meta's complex-number rope
# (tests/rope_reference.py)
kiln_op_reference(rope_torch test_op_rope rope_reference.py --torch-reference)
# llama.cpp's ggml_rope_ext and its backward, both pair layouts and frequency factors
# (tests/rope_ggml_reference.py)
kiln_op_reference(rope_ggml test_op_rope rope_ggml_reference.py --ggml-reference)
# ggml's quantizers and dequantizers, byte for byte and bit for bit, on random and edge rows
# of every block format (tests/quant_reference.py); the formats need no device: cpu only
add_test(NAME quant_ggml_reference
  COMMAND sh -c "/usr/bin/python3 '${CMAKE_CURRENT_SOURCE_DIR}/quant_reference.py' > '${CMAKE_CURRENT_BINARY_DIR}/quant_ggml_reference.txt' && '$<TARGET_FILE:test_quant>' --backend cpu --ggml-reference '${CMAKE_CURRENT_BINARY_DIR}/quant_ggml_reference.txt'")
set_tests_properties(quant_ggml_reference PROPERTIES LABELS cpu SKIP_RETURN_CODE 77 TIMEOUT 120)
