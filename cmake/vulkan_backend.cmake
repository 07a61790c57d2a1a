# The Vulkan backend: host code in engine/vulkan, GLSL compute shaders in shaders/.
#
# Every shaders/*.comp is compiled by glslc at build time (a shader that fails to compile
# fails the build) and embedded in libkiln as a SPIR-V word array, so the library needs no
# files at run time. A shader can also be built in variants: shaders/variants.txt lists
# "<variant name> <source.comp> <glslc -D flags...>" for the builds that need different
# capabilities (e.g. a shared-memory-only reduction for devices without subgroup ops).
# volk (Debian's libvulkan-volk-dev ships volk.c) is compiled into libkiln: the Vulkan
# loader is opened at run time, so kiln starts, and says so, on a machine without Vulkan.

set(KILN_SHADER_DIR ${PROJECT_SOURCE_DIR}/shaders)
set(KILN_SPV_DIR ${CMAKE_CURRENT_BINARY_DIR}/spv)
file(MAKE_DIRECTORY ${KILN_SPV_DIR})

file(GLOB KILN_SHADER_SOURCES CONFIGURE_DEPENDS ${KILN_SHADER_DIR}/*.comp)
file(GLOB KILN_SHADER_INCLUDES CONFIGURE_DEPENDS ${KILN_SHADER_DIR}/*.glsl ${KILN_SHADER_DIR}/*.h)

# The cooperative-matrix GEMM (shaders/gemm_coopmat.comp) needs GL_KHR_cooperative_matrix,
# which older glslang lacks (Debian 12's among them). No machine here can run that path, so
# the shader is built only where this glslc compiles it; elsewhere the backend reports the
# path as not in this build, and nothing else depends on it.
execute_process(COMMAND ${KILN_GLSLC} --target-env=vulkan1.3 -O -Werror -I ${KILN_SHADER_DIR}
                        ${KILN_SHADER_DIR}/gemm_coopmat.comp -o ${CMAKE_CURRENT_BINARY_DIR}/coopmat_probe.spv
                RESULT_VARIABLE _coopmat_rc OUTPUT_QUIET ERROR_QUIET)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${KILN_SHADER_DIR}/gemm_coopmat.comp)
if(_coopmat_rc EQUAL 0)
  set(KILN_VK_COOPMAT ON)
else()
  set(KILN_VK_COOPMAT OFF)
  message(STATUS "kiln: this glslc cannot compile GL_KHR_cooperative_matrix; the Vulkan cooperative-matrix GEMM is not built")
endif()

# name;source;flags... per variant: the plain build of every shader plus shaders/variants.txt
set(KILN_SPV_FILES "")
set(KILN_SPV_NAMES "")
function(kiln_add_shader name src)
  set(out ${KILN_SPV_DIR}/${name}.spv)
  set(env vulkan1.1)
  if(name STREQUAL "gemm_coopmat")
    set(env vulkan1.3)
  endif()
  add_custom_command(OUTPUT ${out}
    COMMAND ${KILN_GLSLC} --target-env=${env} -O -Werror -I ${KILN_SHADER_DIR} ${ARGN} -o ${out} ${src}
    DEPENDS ${src} ${KILN_SHADER_INCLUDES}
    COMMENT "glslc ${name}"
    VERBATIM)
  set(KILN_SPV_FILES ${KILN_SPV_FILES} ${out} PARENT_SCOPE)
  set(KILN_SPV_NAMES ${KILN_SPV_NAMES} ${name} PARENT_SCOPE)
endfunction()

foreach(src ${KILN_SHADER_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  if(name STREQUAL "gemm_coopmat" AND NOT KILN_VK_COOPMAT)
    continue()
  endif()
  kiln_add_shader(${name} ${src})
endforeach()

if(EXISTS ${KILN_SHADER_DIR}/variants.txt)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${KILN_SHADER_DIR}/variants.txt)
  file(STRINGS ${KILN_SHADER_DIR}/variants.txt _variant_lines)
  foreach(line ${_variant_lines})
    if(line MATCHES "^[ \t]*#" OR line MATCHES "^[ \t]*$")
      continue()
    endif()
    separate_arguments(_parts UNIX_COMMAND "${line}")
    list(POP_FRONT _parts _vname _vsrc)
    kiln_add_shader(${_vname} ${KILN_SHADER_DIR}/${_vsrc} ${_parts})
  endforeach()
endif()

# One generated C file holds every SPIR-V module and a table sorted by name.
set(KILN_SPV_C ${CMAKE_CURRENT_BINARY_DIR}/vk_shaders_gen.c)
add_custom_command(OUTPUT ${KILN_SPV_C}
  COMMAND ${CMAKE_COMMAND} -DOUT=${KILN_SPV_C} -DSPV_DIR=${KILN_SPV_DIR} "-DNAMES=${KILN_SPV_NAMES}"
          -P ${PROJECT_SOURCE_DIR}/cmake/vulkan_embed_spirv.cmake
  DEPENDS ${KILN_SPV_FILES} ${PROJECT_SOURCE_DIR}/cmake/vulkan_embed_spirv.cmake
  COMMENT "Embedding SPIR-V shaders"
  VERBATIM)

file(GLOB KILN_VULKAN_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/engine/vulkan/*.c)
# volk.c is third-party code: compile it without our warning flags' -Werror noise
set(KILN_VOLK_C ${CMAKE_CURRENT_BINARY_DIR}/kiln_volk.c)
file(WRITE ${KILN_VOLK_C} "/* volk, compiled into libkiln (see cmake/vulkan_backend.cmake) */\n#include \"volk.c\"\n")
set_source_files_properties(${KILN_VOLK_C} PROPERTIES COMPILE_OPTIONS "-w")
target_sources(kiln PRIVATE ${KILN_VULKAN_SOURCES} ${KILN_SPV_C} ${KILN_VOLK_C})
target_include_directories(kiln PRIVATE ${KILN_VOLK_DIR} ${Vulkan_INCLUDE_DIRS} ${KILN_SHADER_DIR}
                                        ${PROJECT_SOURCE_DIR}/engine/vulkan)
target_compile_definitions(kiln PRIVATE KILN_HAVE_VULKAN VK_NO_PROTOTYPES)
if(KILN_VK_COOPMAT)
  target_compile_definitions(kiln PRIVATE KILN_VK_HAVE_COOPMAT_SHADER)
endif()
target_link_libraries(kiln PRIVATE ${CMAKE_DL_LIBS})
