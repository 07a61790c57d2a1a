#!/usr/bin/env bash
# Single-stream decoding of kiln and of llama.cpp on the same model files, in the same run
# (docs/benchmarks.md, "Decoding per weight format").
#
#   scripts/bench_decode_peer.sh [--llama DIR] [--rounds N] [CKPT [PROMPT [TOKENS [THREADS]]]]
#
# CKPT is an f32 kiln checkpoint (model.safetensors of `kiln train`); without one, the script
# makes two: nanoGPT's shakespeare-sized model (4 layers, dim 128: 3.3 MB, in the caches) and
# GPT-2 small's body with a byte vocabulary (12 layers, dim 768, context 256: 340 MB, far past
# them), each from one training step on generated text (speed does not depend on the
# weights). For each it exports the f32, f16, Q8_0 and Q4_0 GGUF files, times kiln (`kiln
# bench decode --ckpt`, which quantizes in memory to the files' bytes) and llama.cpp
# (scripts/llama_decode_speed.mjs through node-llama-cpp) on THREADS CPU threads (default 1),
# and prints tokens/s of both and their ratio per format.
#
# The two are timed in interleaved rounds (--rounds N, default 5): each round runs, per format,
# kiln (its decode figure: the median of 3 timed runs after a warm-up) and then llama.cpp (one
# timed run after its warm-up), so that a change in the machine's load falls on both; the
# table gives each one's median over the rounds, and kiln's figure of each round. The first lines name the host (CPU model, cores, load average), the date and
# the commit, so that the figures can be set beside others.
#
# llama.cpp is a peer, not a dependency: --llama DIR names a folder where
# `npm i -E node-llama-cpp@3.21.1` was run (scripts/install-peers.sh DIR makes one; default:
# $LLAMA_DIR, else $KILN_NODE_PEERS, the tests' peers); without one the script times kiln
# alone and says so. KILN: the kiln program (default build/host/kiln).
set -euo pipefail
llama_dir=${LLAMA_DIR:-${KILN_NODE_PEERS:-}}
rounds=5
while [ $# -gt 0 ]; do
  case $1 in
  --llama)
    [ $# -ge 2 ] || { echo "bench_decode_peer: --llama needs a folder" >&2; exit 2; }
    llama_dir=$2
    shift 2
    ;;
  --rounds)
    [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "bench_decode_peer: --rounds needs a positive count" >&2; exit 2; }
    rounds=$2
    shift 2
    ;;
  *) break ;;
  esac
done
# the folder as given from where the script was started, before the cd below
[ -z "$llama_dir" ] || [ ! -d "$llama_dir" ] || llama_dir=$(realpath "$llama_dir")
ckpt=${1:+$(realpath "$1")}
cd "$(dirname "$0")/.."
kiln=$(realpath "${KILN:-build/host/kiln}")
prompt=${2:-32}
tokens=${3:-31}
threads=${4:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=$threads OMP_WAIT_POLICY=passive

have_llama=1
if [ ! -d "$llama_dir/node_modules/node-llama-cpp" ] || ! command -v node >/dev/null; then
  have_llama=0
  echo "bench_decode_peer: no node-llama-cpp in '${llama_dir}' (--llama DIR): timing kiln alone" >&2
else
  cp scripts/llama_decode_speed.mjs "$llama_dir/.kiln_llama_decode_speed.mjs" # ESM resolves packages beside the script
fi

# make_ckpt NAME ARGS...: one training step of a model of that shape on generated text
make_ckpt() {
  local name=$1
  shift
  [ -f "$work/text.txt" ] ||
    for i in $(seq 1 4000); do echo "line $i: to be, or not to be, that is the question"; done >"$work/text.txt"
  "$kiln" train --data "$work/text.txt" --out "$work/$name" --steps 1 --warmup 0 --eval-every 0 --eval-windows 1 --batch 1 \
    --backend cpu "$@" >"$work/$name.log" 2>&1 || { cat "$work/$name.log" >&2; exit 1; }
  echo "$work/$name/model.safetensors"
}

# kiln_rate JSON FORMAT: the decode tokens/s of that row of a kiln bench result
kiln_rate() {
  python3 -c '
import json, sys
run = json.load(open(sys.argv[1]))
for f in run["devices"][0]["figures"]:
    if f["key"] == sys.argv[2]:
        print("%.2f" % f["median"] if f.get("median") is not None else "-")' "$1" "ckpt.$2.decode.tokens"
}

# median VALUES...: their median ("-" when any is missing)
median() {
  printf '%s\n' "$@" | python3 -c '
import statistics, sys
v = sys.stdin.read().split()
print("-" if not v or "-" in v else "%.1f" % statistics.median(map(float, v)))'
}

run_model() { # LABEL CKPT
  local label=$1 ckpt=$2 fmt round
  declare -A kiln_runs=() llama_runs=()
  if [ $have_llama = 1 ]; then
    for fmt in f32 f16 q8_0 q4_0; do
      "$kiln" export --ckpt "$ckpt" --format gguf --type "$fmt" --out "$work/$label.$fmt.gguf" >/dev/null 2>"$work/export.err" ||
        { cat "$work/export.err" >&2; exit 1; }
    done
  fi
  for round in $(seq 1 "$rounds"); do
    for fmt in f32 f16 q8_0 q4_0; do
      "$kiln" bench decode --backend cpu --ckpt "$ckpt" --formats "$fmt" --prompt "$prompt" --tokens "$tokens" --repeat 1 \
        --json "$work/kiln.json" >"$work/kiln.out" 2>"$work/kiln.err" || { cat "$work/kiln.out" "$work/kiln.err" >&2; exit 1; }
      [ "$round" != 1 ] || grep -E '^  ckpt [a-z0-9_]+ (weights read|memory) ' "$work/kiln.out" | sed "s/^  ckpt/  $label/"
      kiln_runs[$fmt]+=" $(kiln_rate "$work/kiln.json" "$fmt")"
      if [ $have_llama = 1 ]; then
        llama_runs[$fmt]+=" $(cd "$llama_dir" && node .kiln_llama_decode_speed.mjs "$work/$label.$fmt.gguf" "$prompt" "$tokens" "$threads" 1 |
          python3 -c 'import json, sys; print("%.2f" % json.loads(sys.stdin.read())["decode_tokens_per_s"])')"
      fi
    done
  done
  printf '%-12s %-6s %14s %14s %10s   (medians of %d interleaved rounds)\n' "$label" format "kiln tok/s" "llama.cpp" \
    "kiln/llama" "$rounds"
  for fmt in f32 f16 q8_0 q4_0; do
    local k l="-" ratio="-"
    # shellcheck disable=SC2086 # the runs are words
    k=$(median ${kiln_runs[$fmt]})
    if [ $have_llama = 1 ]; then
      # shellcheck disable=SC2086
      l=$(median ${llama_runs[$fmt]})
      ratio=$(awk -v a="$k" -v b="$l" 'BEGIN { printf "%.2f", a / b }')
    fi
    printf '%-12s %-6s %14s %14s %10s   kiln:%s\n' "" "$fmt" "$k" "$l" "$ratio" "${kiln_runs[$fmt]}"
  done
}

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+changes"
echo "bench_decode_peer: host $(hostname), ${cpu_model:-unknown CPU}, $(nproc --all) CPUs ($(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc) usable), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "bench_decode_peer: $(date -u '+%Y-%m-%d %H:%M UTC'), kiln commit $commit ($kiln), llama.cpp: $([ $have_llama = 1 ] && echo "node-llama-cpp in $llama_dir" || echo none)"
echo "bench_decode_peer: $threads thread(s), prompt $prompt, $tokens tokens decoded greedily, $rounds rounds"
if [ -n "$ckpt" ]; then
  run_model ckpt "$ckpt"
else
  run_model tiny "$(make_ckpt tiny --layers 4 --heads 4 --dim 128 --block 64)"
  run_model gpt2-body "$(make_ckpt body --layers 12 --heads 12 --dim 768 --block 256)"
fi
[ $have_llama = 0 ] || rm -f "$llama_dir/.kiln_llama_decode_speed.mjs"
