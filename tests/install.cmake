# Installing kiln as a user does: `cmake --install` into a temporary prefix, then
#   install_sample_c   samples/c/*.c built against it with pkg-config, shared and static,
#                      and run (tests/install_sample.sh)
# and samples/c/mlp.c as built in the tree, on every backend this build has. The installed
# files' paths: tests/paths.cmake.
if(TARGET kiln_host)
  set(_kiln_sample_flags "")
  if(KILN_SANITIZE)
    set(_kiln_sample_flags -fsanitize=address,undefined)
  endif()
  add_test(NAME install_sample_c
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/install_sample.sh ${PROJECT_BINARY_DIR}
            ${PROJECT_SOURCE_DIR} ${CMAKE_C_COMPILER} ${_kiln_sample_flags})
  set_tests_properties(install_sample_c PROPERTIES LABELS cpu TIMEOUT 300
    ENVIRONMENT "OMP_WAIT_POLICY=passive;CMAKE=${CMAKE_COMMAND}")
endif()

foreach(backend ${KILN_TEST_BACKENDS})
  add_test(NAME sample_c_mlp_${backend} COMMAND kiln_sample_mlp ${backend})
  # as the host tests run (tests/host.cmake): Vulkan under the validation layer
  kiln_host_test_env(${backend} "" env)
  # the sample says "cannot open" where this machine has no device of the backend
  set_tests_properties(sample_c_mlp_${backend} PROPERTIES LABELS ${backend} TIMEOUT 300
    ENVIRONMENT "${env}" SKIP_REGULAR_EXPRESSION "mlp: cannot open")
endforeach()
