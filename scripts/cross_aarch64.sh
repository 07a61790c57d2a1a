#!/usr/bin/env bash
# Cross-compiles kiln for aarch64 Linux with Debian's cross toolchain and runs the CPU
# backend's tests under qemu-user (docs/arm.md).
#
#   scripts/cross_aarch64.sh [build dir]      (default: build-aarch64/ in the checkout)
#
# It installs what is missing (apt, as root or through sudo), configures with
# cmake/toolchain-aarch64-linux-gnu.cmake and -DKILN_WERROR=ON, builds, shows with `file`
# that kiln is an aarch64 program, and runs the cpu tests through qemu-aarch64-static.
# Prints one summary line; exits non-zero if anything fails.
#
# Environment: KILN_JOBS (build and test jobs, default 2), KILN_CROSS_TESTS (the ctest -R
# regex of the tests to run, default below).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-aarch64}
jobs=${KILN_JOBS:-2}

# The cpu backend's op tests (test_op_*, the reference the GPU backends are checked against)
# and the engine's other cpu-only tests, each a few seconds to half a minute under qemu. Left
# out by default: the host's Check programs (test_host_*: formats, tokenizers, models; all
# pass under qemu in about a minute: KILN_CROSS_TESTS='^test_' adds them) and the host_*
# scripts, whose bash or Python drivers start kiln themselves, outside CMake's emulator.
tests=${KILN_CROSS_TESTS:-'^(test_op_.*|test_cpu_.*|test_autograd|test_errors|test_loss_scale|test_probe)$'}

# ---- packages ----
# Host tools: the cross compiler, qemu, glslc and volk (the Vulkan backend's shaders are
# compiled on the host, volk.c into libkiln). Target (:arm64, multiarch) packages: check for
# the tests, pkgconf:arm64 for Debian's aarch64-linux-gnu-pkg-config wrapper, and
# libvulkan-dev:arm64, which CMake's FindVulkan wants to see although kiln opens libvulkan at
# run time. No aarch64 OpenCL or MPI: see docs/arm.md.
host_pkgs=(cmake make file gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static glslc libvulkan-volk-dev)
arm64_pkgs=(check:arm64 libsubunit-dev:arm64 pkgconf:arm64 libvulkan-dev:arm64)

missing=()
for p in "${host_pkgs[@]}" "${arm64_pkgs[@]}"; do
  # installed means "install ok installed"; anything else (absent, half-removed) is missing
  if [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  echo "cross_aarch64: installing ${missing[*]}"
  # arm64 packages come from the same archive once dpkg knows the architecture
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    "${sudo[@]}" dpkg --add-architecture arm64
  fi
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# ---- configure and build ----
# OpenCL off: its loader would have to be the aarch64 one (ocl-icd-opencl-dev:arm64), and no
# OpenCL device can be emulated here. MPI off: the host's OpenMPI is x86-64 only.
t0=$(date +%s)
cmake -S "$root" -B "$build" \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchain-aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=Release -DKILN_WERROR=ON -DBUILD_TESTING=ON \
  -DKILN_VULKAN=ON -DKILN_OPENCL=OFF -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON
nice cmake --build "$build" -j "$jobs"
t1=$(date +%s)

# ---- it is an aarch64 program ----
file "$build/host/kiln"
file -b "$build/host/kiln" | grep -q 'ARM aarch64' || { echo "cross_aarch64: $build/host/kiln is not aarch64" >&2; exit 1; }

# ---- tests under qemu ----
# CMake runs each test program through CMAKE_CROSSCOMPILING_EMULATOR (qemu-aarch64-static,
# from the toolchain file). Each test keeps its own limit, TIMEOUT 600 in tests/CMakeLists.txt:
# the slowest here (test_cpu_gemm) takes about 25 s under qemu. Two at a time on 2 cores: the
# run took 50 s against 119 s one at a time. OMP_WAIT_POLICY=passive: OpenMP threads
# spinning at a barrier cost more under emulation (140 s against 119 s one at a time).
log="$build/cross_aarch64_ctest.log"
set +e
OMP_WAIT_POLICY=passive ctest --test-dir "$build" -L '^cpu$' -R "$tests" -j "$jobs" --output-on-failure 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
t2=$(date +%s)

# ctest's own line: "100% tests passed, 0 tests failed out of 31"
result=$(grep -E 'tests passed|No tests were found' "$log" | tail -n 1)
echo "cross_aarch64: ${result:-no ctest summary}; build $((t1 - t0)) s, qemu tests $((t2 - t1)) s ($build)"
if [[ $rc -ne 0 || -z $result || $result == *"No tests were found"* ]]; then
  exit 1
fi
