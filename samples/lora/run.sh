#!/usr/bin/env bash
# LoRA fine-tuning on what every Debian machine carries: a small GPT that has only read the
# licence texts (/usr/share/common-licenses, from base-files) learns to describe commands as
# their man pages do, "name - what it does" (the NAME lines whatis(1) prints, read from the
# gzip'd roff in /usr/share/man/man1), through a LoRA adapter; its base is never changed.
#
#   samples/lora/run.sh [--out DIR] [--backend cpu|vulkan|opencl] [--base-steps N] [--steps N]
#                       [--rank R] [--alpha A] [--quick]
#
# 1. The data: the licences as one text (the base's), and the NAME lines of the section-1
#    man pages, one a line, split into training lines and held-out lines (every 10th, and
#    the lines of a few well-known commands, whose descriptions the adapter never sees).
# 2. `kiln train` trains the base: byte-level, 4 layers, width 128 (a minute on 2 cores).
# 3. Before: `kiln eval` of the held-out lines on the base, and greedy continuations of
#    "cp - ", "grep - ", ... (the commands held out).
# 4. `kiln train --init BASE --lora-rank R --lora-alpha A` trains the adapter: the output
#    folder holds PEFT's adapter_config.json and adapter_model.safetensors.
# 5. After: the same eval and continuations with `--lora ADAPTER`.
# 6. llama.cpp: `kiln export` writes the base as GGUF and the adapter as llama.cpp's LoRA
#    GGUF, and llama.cpp (node-llama-cpp, when $KILN_NODE_PEERS holds it: see
#    scripts/install-peers.sh) continues the same prompts with the adapter applied.
# --quick runs each step briefly (the test tests/sample_lora.sh): the losses move, the
# outputs are not yet good. docs/results.md records the figures of one full run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
out=runs/lora
backend=cpu
base_steps=2000
steps=600
rank=8
alpha=16
kiln=${KILN:-build/host/kiln}
licenses=/usr/share/common-licenses
man1=/usr/share/man/man1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --base-steps) base_steps=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --rank) rank=$2; shift 2 ;;
    --alpha) alpha=$2; shift 2 ;;
    --quick) base_steps=300; steps=150; shift ;;
    *) echo "lora: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$kiln" ] || { echo "lora: build kiln first (cmake --build build), or set KILN" >&2; exit 2; }
held_commands=(cp grep tar chmod sort)
prompts=("${held_commands[@]/%/ - }")
mkdir -p "$out"

echo "== data"
find "$licenses" -maxdepth 1 -type f 2>/dev/null | LC_ALL=C sort | xargs -r cat >"$out/licenses.txt"
[ "$(wc -c <"$out/licenses.txt")" -ge 100000 ] ||
  { echo "lora: less than 100 KB of licence texts in $licenses (base-files): this sample needs them" >&2; exit 3; }
find "$man1" -name '*.gz' \( -type f -o -type l \) -print0 2>/dev/null | LC_ALL=C sort -z |
  xargs -0 -r zcat -f 2>/dev/null | awk -f "$here/man_names.awk" | LC_ALL=C sort -u >"$out/names.txt" || true
held_re="^($(IFS='|'; echo "${held_commands[*]}"))(, [^ ]+)* - "
grep -E "$held_re" "$out/names.txt" >"$out/held.txt" || true
grep -vE "$held_re" "$out/names.txt" | awk -v held="$out/held.txt" 'NR % 10 == 0 { print >> held; next } { print }' \
  >"$out/train.txt"
n_train=$(wc -l <"$out/train.txt")
[ "$n_train" -ge 100 ] || { echo "lora: only $n_train man page NAME lines in $man1: this sample needs 100 or more" >&2; exit 3; }
echo "$(wc -c <"$out/licenses.txt") bytes of licences; $(wc -l <"$out/names.txt") NAME lines: $n_train to train on, $(wc -l <"$out/held.txt") held out"
head -n 3 "$out/train.txt" | sed 's/^/  /'

echo "== the base: licences only ($base_steps steps, $backend)"
"$kiln" train --data "$out/licenses.txt" --out "$out/base" --force --backend "$backend" --layers 4 --heads 4 --dim 128 \
  --block 128 --batch 8 --steps "$base_steps" --lr 2e-3 --warmup 100 --min-lr 2e-4 --eval-every 0 \
  --log-every 500 2>&1 | grep -E '^(kiln train|val loss)'
base=$out/base/model.safetensors

# greedy continuations of the prompts, one line each (up to the first newline)
continue_prompts() { # KILN-OPTIONS...
  for p in "${prompts[@]}"; do
    printf '  %s%s\n' "$p" "$("$kiln" decode --ckpt "$base" "$@" --backend "$backend" --prompt "$p" --greedy \
      --max-new 60 2>/dev/null | head -n 1)"
  done
}
loss() { "$kiln" eval --ckpt "$base" "$@" --data "$out/held.txt" --backend "$backend" 2>/dev/null | sed -n 's/^loss //p'; }

echo "== before: the base on the held-out NAME lines"
echo "loss $(loss)"
continue_prompts

echo "== LoRA: rank $rank, alpha $alpha, every linear of the blocks ($steps steps)"
rm -rf "$out/adapter"
"$kiln" train --init "$base" --data "$out/train.txt" --out "$out/adapter" --backend "$backend" \
  --lora-rank "$rank" --lora-alpha "$alpha" --batch 8 --steps "$steps" --lr 3e-3 --warmup 30 --min-lr 3e-4 \
  --eval-every 0 --log-every 200 2>&1 | grep -E '^(kiln train|val loss)'
ls "$out/adapter" | sed 's/^/  /'

echo "== after: the base with the adapter"
echo "loss $(loss --lora "$out/adapter")"
continue_prompts --lora "$out/adapter" | tee "$out/kiln_after.txt"

echo "== llama.cpp: the base GGUF with the adapter's LoRA GGUF"
"$kiln" export --ckpt "$base" --format gguf --type f32 --out "$out/base.gguf" 2>/dev/null
"$kiln" export --ckpt "$base" --lora "$out/adapter" --format gguf --out "$out/adapter.gguf" 2>/dev/null
if ! command -v node >/dev/null; then
  echo "skipped: no node (llama.cpp runs here through node-llama-cpp)"
  exit 0
fi
rc=0
node "$here/llama_cpp.mjs" "$out/base.gguf" "$out/adapter.gguf" 60 "${prompts[@]}" >"$out/llama_cpp.txt" || rc=$?
if [ "$rc" = 77 ]; then
  cat "$out/llama_cpp.txt"
  echo "(set KILN_NODE_PEERS to a folder holding node-llama-cpp: scripts/install-peers.sh)"
  exit 0
fi
[ "$rc" = 0 ] || { echo "lora: llama.cpp failed (exit $rc)" >&2; exit 1; }
paste -d '' <(printf '  %s\n' "${prompts[@]}") "$out/llama_cpp.txt" | tee "$out/llama_cpp_after.txt"
if cmp -s "$out/kiln_after.txt" "$out/llama_cpp_after.txt"; then
  echo "llama.cpp continues every prompt as kiln does"
else
  echo "llama.cpp and kiln differ on $(diff "$out/kiln_after.txt" "$out/llama_cpp_after.txt" | grep -c '^<') of ${#prompts[@]} prompts"
fi
