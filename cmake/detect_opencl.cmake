# OpenCL needs the headers (opencl-headers) and the ICD loader (ocl-icd-opencl-dev).
find_package(OpenCL QUIET)
include(${CMAKE_CURRENT_LIST_DIR}/backend_option.cmake)
kiln_backend_option(KILN_OPENCL "Build the OpenCL backend" "${OpenCL_FOUND}")
if(KILN_OPENCL AND NOT OpenCL_FOUND)
  message(FATAL_ERROR "KILN_OPENCL=ON but OpenCL was not found: install opencl-headers and "
                      "ocl-icd-opencl-dev, or configure with -DKILN_OPENCL=OFF.")
elseif(NOT KILN_OPENCL)
  message(STATUS "kiln: OpenCL backend OFF (needs opencl-headers and ocl-icd-opencl-dev)")
endif()
