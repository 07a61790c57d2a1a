#!/usr/bin/env bash
# nanoGPT's CPU config on tiny Shakespeare, in kiln and in PyTorch, one after the other:
# prints each one's validation loss (the last 10% of the file, consecutive windows of 64)
# and wall time. The figures in docs/results.md come from this script, on tinyshakespeare
# (1.1 MB; get it with `curl -o input.txt https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt`).
#   samples/train_shakespeare.sh [--backend cpu|vulkan|opencl] [--data FILE] [--steps N] [--no-torch]
# The text: --data FILE, else $DATA, else /usr/share/common-licenses/GPL-3 (any Debian system).
set -euo pipefail
cd "$(dirname "$0")/.."
backend=cpu
data=${DATA:-/usr/share/common-licenses/GPL-3}
steps=2000
torch=1
kiln=${KILN:-build/host/kiln}
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --no-torch) torch=0; shift ;;
    *) echo "train_shakespeare: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -s "$data" ] || { echo "train_shakespeare: no data at $data (pass --data FILE)" >&2; exit 2; }
[ -x "$kiln" ] || { echo "train_shakespeare: build kiln first (cmake --build build), or set KILN" >&2; exit 2; }
. samples/nanogpt_cpu.sh
nanogpt_cpu_config "$steps"

seconds() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }
t0=$(seconds)
# --force: a second run of the sample replaces the first one's model
kiln_val=$("$kiln" train --data "$data" --out "runs/shakespeare_$backend" --force --backend "$backend" \
  "${config[@]}" --log-every 200 | awk '/^val loss/ {print $3}')
t1=$(seconds)
printf 'kiln (%s):  val loss %s in %.0f s\n' "$backend" "$kiln_val" "$(elapsed "$t0" "$t1")"
if [ "$torch" = 1 ]; then
  torch_val=$(/usr/bin/python3 samples/nanogpt_torch.py --data "$data" --out runs/shakespeare_torch \
    "${config[@]}" --log-every 200 | awk '/^val loss/ {print $3}')
  t2=$(seconds)
  printf 'pytorch:     val loss %s in %.0f s\n' "$torch_val" "$(elapsed "$t1" "$t2")"
fi
