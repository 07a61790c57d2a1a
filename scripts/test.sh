#!/usr/bin/env bash
# Configures, builds (warnings are errors) and runs every test with CTest, except the slow
# oclgrind label (run it with: ctest --test-dir build -L oclgrind).
#   scripts/test.sh [BUILD_DIR] [extra cmake options...]
# KILN_CTEST_SELECT (ctest arguments, e.g. "-L cpu") narrows the tests that run: CI uses it
# to keep the sanitizer stage within its time budget.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$dir" -DKILN_WERROR=ON "$@" >/dev/null
cmake --build "$dir" -j "$jobs"
# Sanitizer runs: leaks inside the GPU drivers (lavapipe, PoCL) are theirs, not ours.
# use_tls=0: clang 14's LeakSanitizer crashes ("Tracer caught signal 11") scanning glibc
# 2.36's dynamic TLS in some tests; without TLS as roots it can only report more, never
# fewer, leaks (glibc's dlerror buffer, kept in TLS, is suppressed in lsan.supp).
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0:use_tls=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Small models train faster when idle OpenMP threads sleep instead of spinning.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
# shellcheck disable=SC2086
ctest --test-dir "$dir" --output-on-failure -j "$jobs" -LE oclgrind ${KILN_CTEST_SELECT:-}
