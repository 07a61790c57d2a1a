# Cross-compiling kiln for 64-bit ARM Linux with Debian's cross toolchain
# (gcc-aarch64-linux-gnu, libc6-dev-arm64-cross), testing it under qemu-user-static.
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake
#
# scripts/cross_aarch64.sh installs what this needs and runs the whole build; docs/arm.md
# says what the cross build has and what runs under qemu.

# The target: setting CMAKE_SYSTEM_NAME is what tells CMake it is cross-compiling (it sets
# CMAKE_CROSSCOMPILING), and cmake/cpu_features.cmake reads the processor to skip the x86
# compiler probes.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

# Debian's cross compiler, by its triplet name; the archiver and ranlib come from the same
# binutils so static libraries (kiln_formats, kiln_model, ...) hold aarch64 objects.
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_AR aarch64-linux-gnu-ar CACHE FILEPATH "aarch64 archiver")
set(CMAKE_RANLIB aarch64-linux-gnu-ranlib CACHE FILEPATH "aarch64 ranlib")

# Where the target's files live: libc6-dev-arm64-cross puts libc in /usr/aarch64-linux-gnu,
# and packages installed the multiarch way (apt-get install check:arm64) put their libraries
# in /usr/lib/aarch64-linux-gnu and their headers in /usr/include, which "/" re-rooted covers.
# Naming the library architecture makes find_library look in <root>/usr/lib/aarch64-linux-gnu
# (and never in the host's /usr/lib/x86_64-linux-gnu).
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Programs run on the build machine (glslc compiles the Vulkan shaders to SPIR-V, which is
# the same on every CPU; git, bash, python3 for the tests), so they are host programs ...
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# ... while libraries, headers and packages must be the target's: ONLY keeps find_library
# from linking a host x86-64 library into an aarch64 program.
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config (the tests find libcheck with it) must read the target's .pc files: the host's
# would hand an x86-64 libcheck to the aarch64 linker. pkgconf:arm64 installs Debian's cross
# wrapper aarch64-linux-gnu-pkg-config, which does exactly that; without it, point the host's
# pkg-config at the target's directories only.
find_program(KILN_CROSS_PKG_CONFIG aarch64-linux-gnu-pkg-config)
if(KILN_CROSS_PKG_CONFIG)
  set(PKG_CONFIG_EXECUTABLE ${KILN_CROSS_PKG_CONFIG} CACHE FILEPATH "pkg-config for aarch64")
else()
  set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
endif()

# ctest (and add_test's commands) run aarch64 programs through qemu's user-mode emulator.
# -L gives it the target's root, where the dynamic loader ld-linux-aarch64.so.1 and libc are.
# -E LD_LIBRARY_PATH keeps libc itself from that root too: once a multiarch package such as
# check:arm64 has installed libc6:arm64, the loader's cache names /lib/aarch64-linux-gnu/
# libc.so.6 first, a different glibc build from the cross root's loader, and a child
# process then hangs in fork() (every Check test forks). Libraries only installed the
# multiarch way (libcheck, libsubunit) are still found through that cache. Without qemu the
# build still works; only the tests cannot run here.
find_program(KILN_QEMU_AARCH64 qemu-aarch64-static)
if(KILN_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${KILN_QEMU_AARCH64} -L /usr/aarch64-linux-gnu
      -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib)
endif()
