#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang) and runs each for SECONDS on its committed
# seeds, as many at a time as there are cores. CI runs it; docs/fuzzing.md explains the targets.
#   scripts/fuzz.sh [SECONDS] [TARGET...]        (default: 60 s, every target)
# Environment: FUZZ_BUILD (default build-fuzz), FUZZ_OUT (default fuzz-out): each target's
# log, the inputs it discovered, and any crash-/leak-/timeout- input it found; FUZZ_JOBS
# (default: the number of cores): how many targets run at once.
# Exits non-zero when a target finds a failure, printing the input and how to replay it.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_json fuzz_safetensors fuzz_gguf fuzz_data fuzz_pairs fuzz_mo fuzz_tokenizer)
build=${FUZZ_BUILD:-build-fuzz}
out=${FUZZ_OUT:-fuzz-out}
cc=${CC:-clang}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
[ $# -gt 0 ] || targets+=(fuzz_tokenizer_json)
[ $# -gt 0 ] || targets+=(fuzz_hf_config)

cmake -S . -B "$build" -DCMAKE_C_COMPILER="$cc" -DKILN_FUZZ=ON -DKILN_VULKAN=OFF -DKILN_OPENCL=OFF \
      -DBUILD_TESTING=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target "${targets[@]}" >/dev/null

# The options each target needs beyond the defaults (docs/fuzzing.md).
options() {
  case "$1" in
    fuzz_json | fuzz_safetensors | fuzz_hf_config) echo "-dict=fuzz/json.dict" ;;
    fuzz_tokenizer) echo "-max_len=8192" ;;
    fuzz_tokenizer_json) echo "-max_len=16384 -dict=fuzz/json.dict" ;;
  esac
}

# One target: the discovered inputs in $out/<target>/corpus (the committed seeds stay
# untouched), its log in $out/<target>/log. Prints one summary line.
run_one() {
  local t=$1 dir="$out/$1"
  mkdir -p "$dir/corpus"
  # shellcheck disable=SC2046
  if "$build/fuzz/$t" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$dir/" \
       $(options "$t") "$dir/corpus" "fuzz/corpus/${t#fuzz_}" >"$dir/log" 2>&1; then
    local runs cov
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
    cov=$(grep -o 'cov: [0-9]*' "$dir/log" | tail -1 | cut -d' ' -f2)
    echo "fuzz: $t: ${runs:-?} runs in $seconds s, coverage ${cov:-?} edges, no failure"
  else
    echo "fuzz: $t FAILED: $(ls "$dir" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' | sed "s|^|$dir/|" | tr '\n' ' ')"
    grep -m1 -E 'ERROR|SUMMARY|runtime error' "$dir/log" || true
    echo "fuzz: replay with $build/fuzz/$t <input>; the log is $dir/log"
    return 1
  fi
}
export -f run_one options
export build out seconds

failed=0
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}' || failed=1
exit $failed
