# The samples that run in a couple of minutes on 2 cores, end to end:
#   sample_lora   samples/lora/run.sh --quick (tests/sample_lora.sh): the adapter lowers the
#                 held-out loss, its PEFT files are written, and llama.cpp (node-llama-cpp,
#                 when KILN_NODE_PEERS holds it) loads its LoRA GGUF on the base's GGUF.
#                 Skipped (77) on a machine without 100 man page NAME lines in
#                 /usr/share/man/man1 (a container without man pages).
if(TARGET kiln_host)
  add_test(NAME sample_lora
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/sample_lora.sh $<TARGET_FILE:kiln_host>
            ${CMAKE_CURRENT_BINARY_DIR}/host_work/sample_lora)
  set_tests_properties(sample_lora PROPERTIES LABELS cpu TIMEOUT 600 SKIP_RETURN_CODE 77
                       ENVIRONMENT "OMP_WAIT_POLICY=passive")
endif()
