# libkiln's two libraries, made of kiln_objects (engine/CMakeLists.txt), their install rules
# and kiln.pc (cmake/kiln.pc.in). Included by engine/CMakeLists.txt once the backends have
# added their sources.
#   kiln         libkiln.a: what the kiln program, the tests and the fuzzers link
#   kiln_shared  libkiln.so.<soversion>, for programs that link the installed library
add_library(kiln STATIC)
target_link_libraries(kiln PUBLIC kiln_objects)

add_library(kiln_shared SHARED)
target_link_libraries(kiln_shared PRIVATE kiln_objects)
# Before 1.0 any minor release may change the ABI, so the soname carries major.minor
# (libkiln.so.0.1); from 1.0 on, the major version alone.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(KILN_SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
else()
  set(KILN_SOVERSION ${PROJECT_VERSION_MAJOR})
endif()
set_target_properties(kiln_shared PROPERTIES OUTPUT_NAME kiln
  VERSION ${PROJECT_VERSION} SOVERSION ${KILN_SOVERSION})

install(TARGETS kiln kiln_shared
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/engine/include/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# kiln.pc finds the prefix from its own folder (${pcfiledir}), so it is right for whatever
# prefix `cmake --install --prefix` is given, and after the tree is moved.
set(_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${_pc_dir}")
  set(KILN_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _up "/root/${_pc_dir}" "/root") # ../.. for lib/pkgconfig
  string(REGEX REPLACE "/$" "" _up "${_up}")
  set(KILN_PC_PREFIX "\${pcfiledir}/${_up}")
endif()
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(KILN_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(KILN_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()
# What a static link needs besides libkiln.a: libm, the threads library, OpenMP (the flags
# CMake found, e.g. -fopenmp), libdl for the Vulkan loader (opened at run time) and
# OpenCL's ICD loader, through its own OpenCL.pc where pkg-config knows it.
set(KILN_PC_REQUIRES_PRIVATE "")
set(KILN_PC_LIBS_PRIVATE "-lm")
if(CMAKE_THREAD_LIBS_INIT)
  string(APPEND KILN_PC_LIBS_PRIVATE " ${CMAKE_THREAD_LIBS_INIT}")
endif()
if(OpenMP_C_FOUND)
  string(APPEND KILN_PC_LIBS_PRIVATE " ${OpenMP_C_FLAGS}")
endif()
if(KILN_VULKAN AND CMAKE_DL_LIBS)
  string(APPEND KILN_PC_LIBS_PRIVATE " -l${CMAKE_DL_LIBS}")
endif()
if(KILN_OPENCL)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(KILN_OPENCL_PC QUIET OpenCL)
  endif()
  if(KILN_OPENCL_PC_FOUND)
    set(KILN_PC_REQUIRES_PRIVATE "OpenCL")
  else()
    string(APPEND KILN_PC_LIBS_PRIVATE " -lOpenCL")
  endif()
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/kiln.pc.in ${PROJECT_BINARY_DIR}/kiln.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kiln.pc DESTINATION ${_pc_dir})
