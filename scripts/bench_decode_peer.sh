#!/usr/bin/env bash
# Single-stream decoding of kiln and of llama.cpp on the same model files, in the same run
# (docs/benchmarks.md, "Decoding per weight format").
#
#   scripts/bench_decode_peer.sh [--llama DIR] [CKPT [PROMPT [TOKENS [THREADS]]]]
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
# llama.cpp is a peer, not a dependency: --llama DIR names a folder where
# `npm i -E node-llama-cpp@3.21.1` was run (scripts/install-peers.sh DIR makes one; default:
# $LLAMA_DIR, else $KILN_NODE_PEERS, the tests' peers); without one the script times kiln
# alone and says so. KILN: the kiln program (default build/host/kiln).
set -euo pipefail
llama_dir=${LLAMA_DIR:-${KILN_NODE_PEERS:-}}
if [ "${1:-}" = --llama ]; then
  [ $# -ge 2 ] || { echo "bench_decode_peer: --llama needs a folder" >&2; exit 2; }
  llama_dir=$2
  shift 2
fi
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

# kiln_rate JSON MODEL FORMAT: the median decode tokens/s of that row of a kiln bench result
kiln_rate() {
  python3 -c '
import json, sys
run = json.load(open(sys.argv[1]))
for f in run["devices"][0]["figures"]:
    if f["key"] == sys.argv[2]:
        print("%.1f" % f["median"] if f.get("median") is not None else "-")' "$1" "ckpt.$2.decode.tokens"
}

run_model() { # LABEL CKPT
  local label=$1 ckpt=$2
  "$kiln" bench decode --backend cpu --ckpt "$ckpt" --prompt "$prompt" --tokens "$tokens" \
    --json "$work/kiln.json" >"$work/kiln.out" 2>"$work/kiln.err" || { cat "$work/kiln.out" "$work/kiln.err" >&2; exit 1; }
  grep -E '^  ckpt [a-z0-9_]+ (decode|weights read|memory) ' "$work/kiln.out" | sed "s/^  ckpt/  $label/"
  printf '%-12s %-6s %14s %14s %10s\n' "$label" format "kiln tok/s" "llama.cpp" "kiln/llama"
  for fmt in f32 f16 q8_0 q4_0; do
    local k l="-" ratio="-"
    k=$(kiln_rate "$work/kiln.json" "$fmt")
    if [ $have_llama = 1 ]; then
      "$kiln" export --ckpt "$ckpt" --format gguf --type "$fmt" --out "$work/m.gguf" >/dev/null 2>"$work/export.err" ||
        { cat "$work/export.err" >&2; exit 1; }
      l=$(cd "$llama_dir" && node .kiln_llama_decode_speed.mjs "$work/m.gguf" "$prompt" "$tokens" "$threads" 3 |
        python3 -c 'import json, sys; print("%.1f" % json.loads(sys.stdin.read())["decode_tokens_per_s"])')
      ratio=$(awk -v a="$k" -v b="$l" 'BEGIN { printf "%.2f", a / b }')
    fi
    printf '%-12s %-6s %14s %14s %10s\n' "" "$fmt" "$k" "$l" "$ratio"
  done
}

echo "bench_decode_peer: $threads thread(s), prompt $prompt, $tokens tokens decoded greedily; $(nproc --all) CPUs"
if [ -n "$ckpt" ]; then
  run_model ckpt "$ckpt"
else
  run_model tiny "$(make_ckpt tiny --layers 4 --heads 4 --dim 128 --block 64)"
  run_model gpt2-body "$(make_ckpt body --layers 12 --heads 12 --dim 768 --block 256)"
fi
[ $have_llama = 0 ] || rm -f "$llama_dir/.kiln_llama_decode_speed.mjs"
