# The declaration of every kernel slot (engine/core/kernel_slots.def) is checked against
# the GLSL bindings and OpenCL parameters at configure time; this shows the check refuses a
# mismatch, naming the kernel and the operand (tests/runners/kernel_slots_mismatch.cmake).
add_test(NAME kernel_slots_mismatch
  COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR} -DWORK=${CMAKE_CURRENT_BINARY_DIR}/kernel_slots_mismatch
          -P ${CMAKE_CURRENT_SOURCE_DIR}/runners/kernel_slots_mismatch.cmake)
set_tests_properties(kernel_slots_mismatch PROPERTIES LABELS cpu TIMEOUT 120)
