#!/usr/bin/env bash
# fp16 (mixed precision) against fp32: the same model, recipe and seed trained twice on one
# backend, then each run's validation loss, their difference and the loss-scaler summary of
# the fp16 run. The "Mixed precision" figures in docs/results.md come from this script, on
# tinyshakespeare (get it with `curl -o input.txt https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt`).
#   samples/train_precision.sh [--backend cpu|vulkan|opencl] [--data FILE] [--steps N]
#                              [--only fp32|fp16] [--out DIR]
# The text: --data FILE, else $DATA, else /usr/share/common-licenses/GPL-3 (any Debian system).
# The model is nanoGPT's CPU config (samples/nanogpt_cpu.sh); --steps sets the length
# of the whole schedule (warmup 100, cosine decay to --steps).
set -euo pipefail
cd "$(dirname "$0")/.."
backend=cpu
data=${DATA:-/usr/share/common-licenses/GPL-3}
steps=300
only=
out=runs/precision
kiln=${KILN:-build/host/kiln}
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "train_precision: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -s "$data" ] || { echo "train_precision: no data at $data (pass --data FILE)" >&2; exit 2; }
[ -x "$kiln" ] || { echo "train_precision: build kiln first (cmake --build build), or set KILN" >&2; exit 2; }
. samples/nanogpt_cpu.sh
nanogpt_cpu_config "$steps"
config+=(--seed 1337 --eval-every 0)

declare -A val
for precision in fp32 fp16; do
  [ -n "$only" ] && [ "$only" != "$precision" ] && continue
  dir=$out/${backend}_${precision}_$steps
  start=$(date +%s.%N)
  "$kiln" train --data "$data" --out "$dir" --force --backend "$backend" --precision "$precision" \
    "${config[@]}" --log-every 100 >/dev/null
  # the last metrics row's val_loss: all its digits, where kiln train prints four
  val[$precision]=$(tail -n 1 "$dir/metrics.jsonl" | sed -n 's/.*"val_loss": \([^,}]*\).*/\1/p')
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
  extra=
  if [ "$precision" = fp16 ]; then
    # the last metrics row: the final loss scale and the skipped steps in all
    extra=$(tail -n 1 "$dir/metrics.jsonl" |
      sed -n 's/.*"loss_scale": \([^,}]*\), "skipped_steps": \([0-9]*\).*/, loss scale \1, \2 steps skipped/p')
  fi
  printf '%s %s: val loss %s in %s s%s\n' "$backend" "$precision" "${val[$precision]}" "$secs" "$extra"
done
if [ -z "$only" ]; then
  awk -v a="${val[fp32]}" -v b="${val[fp16]}" \
    'BEGIN { d = b - a; printf "fp16 - fp32: %+.6f (%s)\n", d, (d < 0.05 && d > -0.05) ? "within 0.05" : "NOT within 0.05" }'
fi
