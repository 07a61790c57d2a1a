# kiln_hostio: the host program's file-format and data layer (JSON, safetensors, training
# data). Plain C with no backend dependencies beyond libkiln's RNG and f16 helpers.
#
# NOTE for host/CMakeLists.txt: this file must be include()d from there, e.g.
#   include(${CMAKE_CURRENT_SOURCE_DIR}/hostio.cmake)
# and the `kiln` program links kiln_hostio. The tests (tests/hostio.cmake) and the fuzzers
# (fuzz/) link it too.
add_library(kiln_hostio STATIC
  ${CMAKE_CURRENT_LIST_DIR}/json.c
  ${CMAKE_CURRENT_LIST_DIR}/safetensors.c
  ${CMAKE_CURRENT_LIST_DIR}/safetensors_write.c
  ${CMAKE_CURRENT_LIST_DIR}/data.c)
target_include_directories(kiln_hostio PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(kiln_hostio PUBLIC kiln)
