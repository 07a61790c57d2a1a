#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build kiln, train a small GPT on
# a text file every Debian machine has (the GPL's text), and decode a sample from it.
#   scripts/quickstart.sh [--backend cpu|vulkan|opencl|auto] [--steps N]
set -euo pipefail
cd "$(dirname "$0")/.."
backend=auto  # a real GPU when there is one; lavapipe and PoCL lose to the native CPU backend
steps=300
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    *) echo "quickstart: unknown option $1" >&2; exit 2 ;;
  esac
done
scripts/install-deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)"
data=/usr/share/common-licenses/GPL-3
[ -s "$data" ] || data=README.md
out=runs/quickstart
build/host/kiln train --data "$data" --out "$out" --force --backend "$backend" \
  --layers 2 --heads 4 --dim 128 --block 64 --batch 16 --steps "$steps" \
  --lr 2e-3 --min-lr 2e-4 --warmup 50 --eval-every 100 --seed 1
echo "--- a sample from the trained model ---"
build/host/kiln decode --ckpt "$out/model.safetensors" --backend "$backend" \
  --prompt "The GNU General Public License " --max-new 300 --temperature 0.8 --top-k 40 --seed 7
echo
