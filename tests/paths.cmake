# No machine's paths (tests/tracked_paths.sh, tests/install_no_build_paths.sh):
#   tracked_paths            the tracked files name absolute paths only under the standard
#                            roots of a Linux or Android system, or placeholders
#   install_no_build_paths   what `cmake --install` writes (the kiln program, libkiln.a,
#                            libkiln.so) holds neither the source tree's path nor the build tree's
add_test(NAME tracked_paths COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tracked_paths.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(tracked_paths PROPERTIES LABELS cpu TIMEOUT 120 SKIP_RETURN_CODE 77)
if(TARGET kiln_host)
  set(_sanitized "")
  if(KILN_SANITIZE)
    set(_sanitized --sanitized)
  endif()
  add_test(NAME install_no_build_paths
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/install_no_build_paths.sh ${PROJECT_BINARY_DIR}
            ${PROJECT_SOURCE_DIR} ${_sanitized})
  set_tests_properties(install_no_build_paths PROPERTIES LABELS cpu TIMEOUT 300 SKIP_RETURN_CODE 77
    ENVIRONMENT "CMAKE=${CMAKE_COMMAND}")
endif()
