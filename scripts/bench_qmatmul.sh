#!/usr/bin/env bash
# One-token products with quantized matrices on one CPU thread, kiln against ggml (the CPU
# backend of llama.cpp that node-llama-cpp 3.21.1 ships), on the same weight bytes: the
# kernels' speed apart from the rest of decoding (scripts/bench_qmatmul.c says what it
# multiplies and prints).
#
#   scripts/bench_qmatmul.sh [bench_qmatmul options: --formats q4_k,q6_k --layers 12 ...]
#
# It builds libkiln (BUILD, default build/), compiles the benchmark against it and against
# ggml's headers from node-llama-cpp's llama.cpp source bundle (cloned into LLAMA_SRC,
# default /tmp/llama-src, when absent), and runs it with OMP_NUM_THREADS=1. ggml is a peer,
# not a dependency: $KILN_NODE_PEERS names the folder holding node_modules with
# node-llama-cpp and @node-llama-cpp/linux-x64 (scripts/install-peers.sh); without it the
# script says so and exits 77.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
src=${LLAMA_SRC:-/tmp/llama-src}
peers=${KILN_NODE_PEERS:-}
libs=$peers/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
bundle=$peers/node_modules/node-llama-cpp/llama/gitRelease.bundle
if [ -z "$peers" ] || [ ! -f "$libs/libggml-base.so" ] || [ ! -f "$bundle" ]; then
  echo "bench_qmatmul: no node-llama-cpp in \$KILN_NODE_PEERS/node_modules (${peers:-unset}): skipped"
  exit 77
fi
[ -d "$src/ggml/include" ] || git clone -q "$bundle" "$src"
cmake --build "$build" --target kiln -j2 >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -Iengine/include -I"$src/ggml/include" scripts/bench_qmatmul.c \
  "$build/engine/libkiln.a" -L"$libs" -l:libggml-base.so -l:libggml.v0.4.0.so -Wl,-rpath,"$libs" \
  -fopenmp -lOpenCL -lm -ldl -lpthread -o "$out/bench_qmatmul"
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), one thread"
OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive "$out/bench_qmatmul" --ggml "$libs" "$@"
