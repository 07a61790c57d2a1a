# `kiln bench` end to end on the cpu backend (tests/host_bench.sh): a --quick run writes a
# result file with every kind of figure, compare reads two runs and refuses malformed,
# foreign and missing files. It checks the command and its files, never a speed.
if(TARGET kiln_host)
  add_test(NAME host_bench
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_bench.sh $<TARGET_FILE:kiln_host>
            ${CMAKE_CURRENT_BINARY_DIR}/host_work/bench)
  # passive OpenMP waiting: ctest runs tests side by side on a small machine (see host.cmake)
  set_tests_properties(host_bench PROPERTIES LABELS cpu TIMEOUT 120 ENVIRONMENT "OMP_WAIT_POLICY=passive")
endif()
# `kiln bench train --lora` briefly (tests/host_bench_lora.sh): a row per run, LoRA's memory
# below full fine-tuning's, the Q4_0 base below the F16 one, PyTorch's LoRA step and the
# ratio where Debian's torch is installed. Never a speed.
if(TARGET kiln_host)
  add_test(NAME host_bench_lora
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_bench_lora.sh $<TARGET_FILE:kiln_host>
            ${CMAKE_CURRENT_BINARY_DIR}/host_work/bench_lora)
  set_tests_properties(host_bench_lora PROPERTIES LABELS cpu TIMEOUT 300 ENVIRONMENT "OMP_WAIT_POLICY=passive")
endif()
# `kiln bench attention` briefly (tests/host_bench_attention.sh): fused memory linear in T and
# below unfused, "does not fit" under KILN_MEMORY_LIMIT, bad --lengths. Never a speed.
if(TARGET kiln_host)
  add_test(NAME host_bench_attention
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/host_bench_attention.sh $<TARGET_FILE:kiln_host>
            ${CMAKE_CURRENT_BINARY_DIR}/host_work/bench_attention)
  set_tests_properties(host_bench_attention PROPERTIES LABELS cpu TIMEOUT 120 ENVIRONMENT "OMP_WAIT_POLICY=passive")
endif()
