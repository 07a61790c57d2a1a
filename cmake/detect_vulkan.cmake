# Vulkan needs the headers (libvulkan-dev), volk (libvulkan-volk-dev) and glslc to compile
# the shaders. KILN_VULKAN defaults to ON when all three are present (backend_option.cmake).
find_package(Vulkan QUIET COMPONENTS glslc)
find_path(KILN_VOLK_DIR volk.h)
find_program(KILN_GLSLC glslc)
set(_kiln_vulkan_found OFF)
if(Vulkan_FOUND AND KILN_VOLK_DIR AND KILN_GLSLC)
  set(_kiln_vulkan_found ON)
endif()
include(${CMAKE_CURRENT_LIST_DIR}/backend_option.cmake)
kiln_backend_option(KILN_VULKAN "Build the Vulkan backend" "${_kiln_vulkan_found}")
if(KILN_VULKAN AND NOT _kiln_vulkan_found)
  message(FATAL_ERROR "KILN_VULKAN=ON but the Vulkan SDK is incomplete: need libvulkan-dev "
                      "(headers: ${Vulkan_INCLUDE_DIRS}), libvulkan-volk-dev (volk.h: ${KILN_VOLK_DIR}) "
                      "and glslc (${KILN_GLSLC}). Install them or configure with -DKILN_VULKAN=OFF.")
elseif(NOT KILN_VULKAN)
  message(STATUS "kiln: Vulkan backend OFF (needs libvulkan-dev, libvulkan-volk-dev and glslc)")
endif()
