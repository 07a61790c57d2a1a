# The Vulkan backend: host code in engine/vulkan, GLSL compute shaders in shaders/.
#
# Every shaders/*.comp is compiled by glslc at build time (a shader that fails to compile
# fails the build) and embedded in libkiln as a SPIR-V word array, so the library needs no
# files at run time. A shader can also be built in variants: the f16 and shared-memory-only
# builds of the kernel slots' modules that engine/core/kernel_slots.def declares
# (KILN_SLOT_VK_VARIANTS, cmake/kernel_slots.cmake), and shaders/variants.txt's lines
# "<variant name> <source.comp> <glslc -D flags...>" for the builds with other flags.
# Shaders include shaders/, engine/ (for abi/kernel_abi.h, the values the host shares) and
# the generated kernel_push.h's folder.
#
# The host names each module by an id of the enum vk_shader_id (VK_SHADER_<name>), which
# is generated here at configure time (vk_gen/vk_shader_ids.h); the modules themselves and
# the table of each kernel's f16 and no-subgroup builds are generated at build time
# (cmake/vulkan_embed_spirv.cmake). The backend checks each module's bindings against its
# push block when it starts (engine/vulkan/vk_shaders.c).
# volk (Debian's libvulkan-volk-dev ships volk.c) is compiled into libkiln: the Vulkan
# loader is opened at run time, so kiln starts, and says so, on a machine without Vulkan.

set(KILN_SHADER_DIR ${PROJECT_SOURCE_DIR}/shaders)
set(KILN_SPV_DIR ${CMAKE_CURRENT_BINARY_DIR}/spv)
set(KILN_VK_GEN_DIR ${CMAKE_CURRENT_BINARY_DIR}/vk_gen) # generated headers
file(MAKE_DIRECTORY ${KILN_SPV_DIR} ${KILN_VK_GEN_DIR})

file(GLOB KILN_SHADER_SOURCES CONFIGURE_DEPENDS ${KILN_SHADER_DIR}/*.comp)
file(GLOB KILN_SHADER_INCLUDES CONFIGURE_DEPENDS ${KILN_SHADER_DIR}/*.glsl ${KILN_SHADER_DIR}/*.h)
# the facts the host and the kernels share (kinds, modes, tile sizes): shaders include
# "abi/kernel_abi.h" as engine/ does
list(APPEND KILN_SHADER_INCLUDES ${PROJECT_SOURCE_DIR}/engine/abi/kernel_abi.h ${KILN_SLOTS_GEN_DIR}/kernel_push.h)
set(KILN_GLSLC_INCLUDES -I ${KILN_SHADER_DIR} -I ${PROJECT_SOURCE_DIR}/engine -I ${KILN_SLOTS_GEN_DIR})

# The cooperative-matrix GEMM (shaders/gemm_coopmat.comp) needs GL_KHR_cooperative_matrix,
# which older glslang lacks (Debian 12's among them). No machine here can run that path, so
# the shader is built only where this glslc compiles it; elsewhere the backend reports the
# path as not in this build, and nothing else depends on it.
execute_process(COMMAND ${KILN_GLSLC} --target-env=vulkan1.3 -O -Werror ${KILN_GLSLC_INCLUDES}
                        ${KILN_SHADER_DIR}/gemm_coopmat.comp -o ${CMAKE_CURRENT_BINARY_DIR}/coopmat_probe.spv
                RESULT_VARIABLE _coopmat_rc OUTPUT_QUIET ERROR_QUIET)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${KILN_SHADER_DIR}/gemm_coopmat.comp)
if(_coopmat_rc EQUAL 0)
  set(KILN_VK_COOPMAT ON)
else()
  set(KILN_VK_COOPMAT OFF)
  message(STATUS "kiln: this glslc cannot compile GL_KHR_cooperative_matrix; the Vulkan cooperative-matrix GEMM is not built")
endif()

# Every module: the plain build of every shader, the slot kernels' builds core/kernel_slots.def
# declares (KILN_SLOT_VK_VARIANTS), and shaders/variants.txt's.
#   KILN_SPV_MODULES  every module's name (each has an id, built or not)
#   KILN_SPV_KERNELS  the plain builds of shaders/*.comp, each a kernel with its own builds
#   KILN_SPV_NAMES    the modules this build compiles (gemm_coopmat may be missing)
#   KILN_SPV_FILES    their SPIR-V files
#   KILN_SPV_VARIANTS variant;kernel;f16;no_subgroup for the builds vk_variant picks
set(KILN_SPV_MODULES "")
set(KILN_SPV_KERNELS "")
set(KILN_SPV_NAMES "")
set(KILN_SPV_FILES "")
set(KILN_SPV_VARIANTS "")
function(kiln_add_shader name src)
  set(KILN_SPV_MODULES ${KILN_SPV_MODULES} ${name} PARENT_SCOPE)
  if(name STREQUAL "gemm_coopmat" AND NOT KILN_VK_COOPMAT)
    return()
  endif()
  set(out ${KILN_SPV_DIR}/${name}.spv)
  set(env vulkan1.1)
  if(name STREQUAL "gemm_coopmat")
    set(env vulkan1.3)
  endif()
  add_custom_command(OUTPUT ${out}
    COMMAND ${KILN_GLSLC} --target-env=${env} -O -Werror ${KILN_GLSLC_INCLUDES} ${ARGN} -o ${out} ${src}
    DEPENDS ${src} ${KILN_SHADER_INCLUDES}
    COMMENT "glslc ${name}"
    VERBATIM)
  set(KILN_SPV_FILES ${KILN_SPV_FILES} ${out} PARENT_SCOPE)
  set(KILN_SPV_NAMES ${KILN_SPV_NAMES} ${name} PARENT_SCOPE)
endfunction()

foreach(src ${KILN_SHADER_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  kiln_add_shader(${name} ${src})
  list(APPEND KILN_SPV_KERNELS ${name})
endforeach()

set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${KILN_SHADER_DIR}/variants.txt)
file(STRINGS ${KILN_SHADER_DIR}/variants.txt _variant_lines)
# the f16 and no-subgroup builds that engine/core/kernel_slots.def declares, in the same form
# (cmake/kernel_slots.cmake), then shaders/variants.txt's
foreach(line ${KILN_SLOT_VK_VARIANTS} ${_variant_lines})
  if(line MATCHES "^[ \t]*#" OR line MATCHES "^[ \t]*$")
    continue()
  endif()
  separate_arguments(_parts UNIX_COMMAND "${line}")
  list(POP_FRONT _parts _vname _vsrc)
  kiln_add_shader(${_vname} ${KILN_SHADER_DIR}/${_vsrc} ${_parts})
  # a build of its source's kernel when its flags only pick f16 data and/or no subgroups
  set(_flags ${_parts})
  list(REMOVE_ITEM _flags -DKILN_F16 -DKILN_NO_SUBGROUP)
  if(NOT _flags)
    get_filename_component(_kernel ${_vsrc} NAME_WE)
    set(_f16 0)
    set(_shared 0)
    if(-DKILN_F16 IN_LIST _parts)
      set(_f16 1)
    endif()
    if(-DKILN_NO_SUBGROUP IN_LIST _parts)
      set(_shared 1)
    endif()
    list(APPEND KILN_SPV_VARIANTS "${_vname}:${_kernel}:${_f16}:${_shared}")
  endif()
endforeach()
list(SORT KILN_SPV_MODULES)

# vk_shader_id, one id per module in name order, is known at configure time (it depends on
# the file names alone), so every source that includes it finds it before anything builds.
set(_ids "/* Generated by cmake/vulkan_backend.cmake from the files in shaders/:\n")
string(APPEND _ids " * do not edit. */\n#ifndef KILN_VK_SHADER_IDS_H\n#define KILN_VK_SHADER_IDS_H\n\n")
string(APPEND _ids "/* Every SPIR-V module of the Vulkan backend, in name order (kiln_vk_shaders[]). */\n")
string(APPEND _ids "typedef enum vk_shader_id {\n")
foreach(name ${KILN_SPV_MODULES})
  string(APPEND _ids "    VK_SHADER_${name},\n")
endforeach()
string(APPEND _ids "    VK_SHADER_COUNT,\n    VK_SHADER_NONE = VK_SHADER_COUNT /* no such build (kiln_vk_variants) */\n")
string(APPEND _ids "} vk_shader_id;\n\n#endif\n")
file(WRITE ${KILN_VK_GEN_DIR}/vk_shader_ids.h.tmp "${_ids}")
file(COPY_FILE ${KILN_VK_GEN_DIR}/vk_shader_ids.h.tmp ${KILN_VK_GEN_DIR}/vk_shader_ids.h ONLY_IF_DIFFERENT)

# One generated C file holds every SPIR-V module, the table indexed by vk_shader_id, and
# the table of each kernel's builds.
set(KILN_SPV_C ${CMAKE_CURRENT_BINARY_DIR}/vk_shaders_gen.c)
add_custom_command(OUTPUT ${KILN_SPV_C}
  COMMAND ${CMAKE_COMMAND} -DOUT=${KILN_SPV_C} -DSPV_DIR=${KILN_SPV_DIR} "-DMODULES=${KILN_SPV_MODULES}"
          "-DBUILT=${KILN_SPV_NAMES}" "-DKERNELS=${KILN_SPV_KERNELS}"
          "-DVARIANTS=${KILN_SPV_VARIANTS}"
          -P ${PROJECT_SOURCE_DIR}/cmake/vulkan_embed_spirv.cmake
  DEPENDS ${KILN_SPV_FILES} ${PROJECT_SOURCE_DIR}/cmake/vulkan_embed_spirv.cmake
  COMMENT "Embedding SPIR-V shaders"
  VERBATIM)

file(GLOB KILN_VULKAN_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/engine/vulkan/*.c)
# volk.c is third-party code: compile it without our warning flags' -Werror noise
set(KILN_VOLK_C ${CMAKE_CURRENT_BINARY_DIR}/kiln_volk.c)
file(WRITE ${KILN_VOLK_C} "/* volk, compiled into libkiln (see cmake/vulkan_backend.cmake) */\n#include \"volk.c\"\n")
set_source_files_properties(${KILN_VOLK_C} PROPERTIES COMPILE_OPTIONS "-w")
target_sources(kiln_objects PRIVATE ${KILN_VULKAN_SOURCES} ${KILN_SPV_C} ${KILN_VOLK_C})
target_include_directories(kiln_objects PRIVATE ${KILN_VOLK_DIR} ${Vulkan_INCLUDE_DIRS} ${KILN_SHADER_DIR}
                                        ${PROJECT_SOURCE_DIR}/engine/vulkan)
# the generated vk_shader_ids.h, also for the tests of the shader table (test_vulkan_abi)
target_include_directories(kiln_objects PUBLIC $<BUILD_INTERFACE:${KILN_VK_GEN_DIR}>)
target_compile_definitions(kiln_objects PRIVATE KILN_HAVE_VULKAN VK_NO_PROTOTYPES)
# the instance's reference count and open-device list are shared by threads (vk_instance.c)
find_package(Threads REQUIRED)
target_link_libraries(kiln_objects PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
