# `kiln bench gemm` end to end on two small sizes: it exits nonzero when kiln's product
# differs from OpenBLAS's, so this checks the command and the agreement, never a speed.
if(TARGET kiln_host)
  add_test(NAME bench_gemm_cpu COMMAND kiln_host bench gemm --backend cpu --sizes 64,33x17x130 --repeat 1)
  set_tests_properties(bench_gemm_cpu PROPERTIES LABELS cpu TIMEOUT 120)
endif()
