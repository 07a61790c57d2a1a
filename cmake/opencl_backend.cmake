# The OpenCL backend (included by engine/CMakeLists.txt when KILN_OPENCL is ON).
#
# Host code: engine/opencl/*.c. Kernels: cl/<family>.cl, one op family per file, embedded into the
# library as text (cmake/opencl_embed.cmake writes cl_sources.c at build time) together with
# engine/abi/kernel_abi.h (the kinds, flags and tile sizes host and kernels share), and
# compiled at run time for the chosen device, with options picked per device (cl_device.c).
file(GLOB KILN_OPENCL_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/engine/opencl/*.c)
file(GLOB KILN_OPENCL_KERNELS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/cl/*.cl)
list(SORT KILN_OPENCL_KERNELS)
set(KILN_KERNEL_ABI ${PROJECT_SOURCE_DIR}/engine/abi/kernel_abi.h)

set(KILN_OPENCL_EMBEDDED ${CMAKE_CURRENT_BINARY_DIR}/cl_sources.c)
add_custom_command(
  OUTPUT ${KILN_OPENCL_EMBEDDED}
  COMMAND ${CMAKE_COMMAND} -DOUT=${KILN_OPENCL_EMBEDDED} "-DKERNELS=${KILN_OPENCL_KERNELS}"
          -DABI_HEADER=${KILN_KERNEL_ABI} -P ${PROJECT_SOURCE_DIR}/cmake/opencl_embed.cmake
  DEPENDS ${KILN_OPENCL_KERNELS} ${KILN_KERNEL_ABI} ${PROJECT_SOURCE_DIR}/cmake/opencl_embed.cmake
  COMMENT "Embedding the OpenCL kernels (cl/<family>.cl) and engine/abi/kernel_abi.h"
  VERBATIM)

target_sources(kiln_objects PRIVATE ${KILN_OPENCL_SOURCES} ${KILN_OPENCL_EMBEDDED})
target_compile_definitions(kiln_objects PRIVATE KILN_HAVE_OPENCL)
target_link_libraries(kiln_objects PRIVATE OpenCL::OpenCL)
