#!/usr/bin/env bash
# The quality of every weight format kiln writes: a byte-level Llama-architecture model
# trained briefly on tinyshakespeare (4 layers, dim 256, ffn 768: every row a multiple of 256,
# so the K formats are themselves and not their fallbacks; tied, so the mixes quantize the
# token embedding as the output head), exported or quantized to each format, then
# `kiln eval --backend cpu` on the held-out last 10% of the text (the CPU's products, with
# the activations rounded as ggml rounds them). Prints one table row per format: the file's
# bytes, its eval loss and the change against f32 (docs/quantization.md, "Measured: the K
# formats").
#
#   scripts/quant_quality.sh [DIR]
#
# DIR (default /tmp/kiln-quant-quality) keeps the checkpoint: it is trained only when
# DIR/model.safetensors is absent (STEPS optimizer steps, default 1500: about five minutes on two
# cores). DATA: the text (default /usr/share/common-licenses/GPL-3, on any Debian system;
# docs/quantization.md's figures are on tinyshakespeare, from
# https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt).
# KILN: the kiln program (default build/host/kiln).
set -euo pipefail
cd "$(dirname "$0")/.."
kiln=$(realpath "${KILN:-build/host/kiln}")
steps=${STEPS:-1500}
dir=${1:-/tmp/kiln-quant-quality}
data=${DATA:-/usr/share/common-licenses/GPL-3}
[ -s "$data" ] || { echo "quant_quality: no text at $data (set DATA=FILE)" >&2; exit 1; }
mkdir -p "$dir"
# the held-out tenth kiln train keeps for its val loss (bytes are the tokens), and the byte
# before it: the first window's first input, so that every target is a held-out byte
total=$(wc -c <"$data")
tail -c $((total - total * 9 / 10)) "$data" >"$dir/val.txt"
if [ ! -f "$dir/model.safetensors" ]; then
  echo "quant_quality: training $dir ($steps steps)"
  "$kiln" train --data "$data" --model llama --dim 256 --heads 4 --layers 4 --ffn 768 --steps "$steps" \
    --eval-every 0 --eval-windows 50 --log-every 100 --backend cpu --out "$dir" | tail -1
fi

loss() { "$kiln" eval --ckpt "$1" --data "$dir/val.txt" --backend cpu 2>/dev/null | awk '/^loss/ { print $2 }'; }

base=$(loss "$dir/model.safetensors")
printf '| format | file bytes | eval loss | change |\n|---|---|---|---|\n'
printf '| f32 (model.safetensors) | %s | %s | |\n' "$(stat -c %s "$dir/model.safetensors" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta')" "$base"
for t in f32 f16 q8_0 q6_k q5_k q5_k_m q5_0 q5_1 q4_k q4_k_m q4_k_s q4_0 q4_1; do
  file="$dir/$t.gguf"
  "$kiln" export --ckpt "$dir/model.safetensors" --format gguf --type "$t" --out "$file" >"$dir/export.log" 2>&1 ||
    { cat "$dir/export.log" >&2; exit 1; }
  l=$(loss "$file")
  printf '| %s | %s | %s | %+.4f |\n' "$t" "$(stat -c %s "$file" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta')" "$l" \
    "$(awk -v a="$l" -v b="$base" 'BEGIN { print a - b }')"
done
