#!/usr/bin/env bash
# kiln against llama.cpp decoding the same GGUF files, one CPU thread each (docs/benchmarks.md,
# "kiln against llama.cpp on a Llama-family model" and "K-quants against llama.cpp").
#
#   scripts/bench_llamacpp.sh [DIR]                 SmolLM2-135M's shape, F16 and Q8_0
#   MODEL=gpt2-small scripts/bench_llamacpp.sh [DIR]  GPT-2 small's body, Q4_K and Q6_K
#
# MODEL=smollm2 (the default): DIR holds smollm2-135m-F16.gguf and smollm2-135m-Q8_0.gguf
# (scripts/bench_smollm2_gguf.py writes them there first when they are absent).
# MODEL=gpt2-small: GPT-2 small's body (12 layers, dim 768, 12 heads, MLP 3072: every row a
# multiple of 256; a byte vocabulary, context 256) as gpt2 GGUF files: `kiln train --steps 1`
# makes the f32 checkpoint (speed does not depend on the weights), `kiln export --type f32`
# writes gpt2-small-F32.gguf and llama.cpp's own quantizer (tests/llama/llama_quantize.py:
# llama_model_quantize --pure) writes gpt2-small-Q4_K.gguf and gpt2-small-Q6_K.gguf from it.
# TYPES overrides the formats timed (e.g. TYPES=Q6_K).
# Without DIR the files go to a temporary folder. For each format, RUNS times (default 5) in
# turn: kiln (`kiln bench decode --ckpt FILE --quick`, the CPU backend on one OpenMP thread)
# then llama.cpp (scripts/llama_decode_speed.mjs through node-llama-cpp, threads 1), each a
# fresh process that reads the file, evaluates a prompt of PROMPT token ids (default 16),
# decodes one warm-up stream and then one timed stream of TOKENS greedy tokens (default 32).
# Prints each run's tokens/s, the medians and their ratio kiln / llama.cpp. Interleaving puts
# both under the same neighbours' load; the median drops the runs that load disturbed most.
#
# llama.cpp is a peer, not a dependency: $KILN_NODE_PEERS names the folder holding
# node_modules with node-llama-cpp 3.21.1 and @node-llama-cpp/linux-x64 (scripts/install-peers.sh);
# without it the script says so and exits 77. KILN: the kiln program (default build/host/kiln).
set -euo pipefail
cd "$(dirname "$0")/.."
kiln=$(realpath "${KILN:-build/host/kiln}")
runs=${RUNS:-5}
prompt=${PROMPT:-16}
tokens=${TOKENS:-32}
peers=${KILN_NODE_PEERS:-}
if [ -z "$peers" ] || [ ! -f "$peers/node_modules/node-llama-cpp/dist/index.js" ] || ! command -v node >/dev/null; then
  echo "bench_llamacpp: no node-llama-cpp in \$KILN_NODE_PEERS/node_modules (${peers:-unset}) or no node: skipped"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dir=${1:-$work}
mkdir -p "$dir"
model=${MODEL:-smollm2}

# The model's files in $dir, written when absent; sets name, label and types.
case "$model" in
smollm2)
  name=smollm2-135m label="SmolLM2-135M shape" types=${TYPES:-F16 Q8_0}
  if [ ! -f "$dir/$name-F16.gguf" ] || [ ! -f "$dir/$name-Q8_0.gguf" ]; then
    echo "bench_llamacpp: writing the SmolLM2-135M-shaped GGUF files into $dir"
    /usr/bin/python3 scripts/bench_smollm2_gguf.py "$dir" >/dev/null
  fi ;;
gpt2-small)
  name=gpt2-small label="GPT-2 small's body" types=${TYPES:-Q4_K Q6_K}
  for type in $types; do
    [ -f "$dir/$name-$type.gguf" ] && continue
    if [ ! -f "$dir/$name-F32.gguf" ]; then
      echo "bench_llamacpp: writing GPT-2 small's body (f32 GGUF) into $dir"
      for i in $(seq 1 4000); do echo "line $i: to be, or not to be, that is the question"; done >"$work/text.txt"
      "$kiln" train --data "$work/text.txt" --out "$work/ckpt" --dim 768 --layers 12 --heads 12 --block 256 \
        --steps 1 --warmup 0 --eval-every 0 --eval-windows 1 --batch 1 --backend cpu >"$work/train.log" 2>&1 ||
        { cat "$work/train.log" >&2; exit 1; }
      "$kiln" export --ckpt "$work/ckpt/model.safetensors" --format gguf --type f32 --out "$dir/$name-F32.gguf" >/dev/null
    fi
    echo "bench_llamacpp: llama.cpp's quantizer writes $name-$type.gguf"
    /usr/bin/python3 tests/llama/llama_quantize.py "$dir/$name-F32.gguf" "$dir/$name-$type.gguf" "$type" --pure
  done ;;
*) echo "bench_llamacpp: MODEL is smollm2 or gpt2-small, not $model" >&2; exit 1 ;;
esac
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive

# kiln_rate FILE FMT: tokens/s of one kiln bench decode run
kiln_rate() {
  "$kiln" bench decode --backend cpu --quick --ckpt "$1" --formats "$2" --prompt "$prompt" --tokens "$tokens" \
    --json "$work/kiln.json" >"$work/kiln.out" 2>&1 || { cat "$work/kiln.out" >&2; exit 1; }
  /usr/bin/python3 -c '
import json, sys
for f in json.load(open(sys.argv[1]))["devices"][0]["figures"]:
    if f["key"] == "ckpt.%s.decode.tokens" % sys.argv[2]:
        print("%.2f" % f["median"])' "$work/kiln.json" "$2"
}

# llama_rate FILE: tokens/s of one llama.cpp run
llama_rate() {
  node scripts/llama_decode_speed.mjs "$1" "$prompt" "$tokens" 1 1 2>"$work/llama.err" |
    /usr/bin/python3 -c 'import json, sys; print("%.2f" % json.loads(sys.stdin.read())["decode_tokens_per_s"])' ||
    { cat "$work/llama.err" >&2; exit 1; }
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "bench_llamacpp: $label, 1 thread, prompt $prompt, $tokens tokens decoded greedily, $runs interleaved runs;" \
  "kiln commit $(git rev-parse --short HEAD), load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-40s %-40s %8s %8s %6s\n' format "kiln tokens/s per run" "llama.cpp tokens/s per run" kiln llama.cpp ratio
for type in $types; do
  file="$dir/$name-$type.gguf"
  fmt=$(echo "$type" | tr 'A-Z' 'a-z')
  k="" l=""
  for _ in $(seq 1 "$runs"); do
    k="$k $(kiln_rate "$file" "$fmt")"
    l="$l $(llama_rate "$file")"
  done
  km=$(echo "$k" | median) lm=$(echo "$l" | median)
  printf '%-6s %-40s %-40s %8.2f %8.2f %6.2f\n' "$type" "$k" "$l" "$km" "$lm" "$(awk -v a="$km" -v b="$lm" 'BEGIN { print a / b }')"
done
echo "load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
