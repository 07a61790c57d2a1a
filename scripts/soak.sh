#!/usr/bin/env bash
# A soak check: a long training run with frequent checkpoints and evaluations, whose
# memory must stay flat after warm-up (no leak, host or device). The run's metrics.jsonl
# records, at every evaluation, the process's resident set and what the engine holds on the
# device (model/metrics.h); this script trains, then reads them back.
#   scripts/soak.sh [--backend cpu|vulkan|opencl] [--steps N] [--eval-every N] [--out DIR]
#                   [--data FILE]
# Defaults: cpu, 2000 steps, an evaluation and a checkpoint every 20, a small GPT on
# generated text. Prints the memory at the end of warm-up (the first 10% of the steps) and
# its range after, and exits 1 when the device memory changes after warm-up or the resident
# set grows by more than 2% (and 1 MiB) from warm-up to the end. docs/benchmarks.md
# ("Soak") records the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
backend=cpu
steps=2000
every=20
out=runs/soak
data=""
kiln=${KILN:-build/host/kiln}
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --eval-every) every=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    *) echo "soak: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$kiln" ] || { echo "soak: build kiln first (cmake --build build), or set KILN" >&2; exit 2; }
mkdir -p "$out"
if [ -z "$data" ]; then
  data=$out/text.txt
  for i in $(seq 1 3000); do echo "line $i: the quick brown fox jumps over the lazy dog"; done >"$data"
fi

start=$(date +%s)
OMP_WAIT_POLICY=passive "$kiln" train --data "$data" --out "$out/run" --force --backend "$backend" \
  --layers 2 --heads 4 --dim 64 --block 64 --batch 8 --steps "$steps" --eval-every "$every" \
  --eval-windows 16 --log-every 500 >/dev/null
echo "soak: $steps steps on $backend in $(( $(date +%s) - start )) s, a checkpoint every $every"

python3 - "$out/run/metrics.jsonl" "$steps" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if "host_rss_bytes" in r]
steps = int(sys.argv[2])
warm = [r for r in rows if r["step"] <= steps // 10]
after = [r for r in rows if r["step"] > steps // 10]
if not warm or not after:
    sys.exit("soak: too few evaluations to compare (lower --eval-every)")
MiB = 1 << 20
w = warm[-1]
rss = [r["host_rss_bytes"] for r in after]
dev = [r["device_bytes"] for r in after]
print(f"soak: {len(rows)} evaluations; at the end of warm-up (step {w['step']}): "
      f"resident {w['host_rss_bytes'] / MiB:.1f} MiB, device {w['device_bytes'] / MiB:.2f} MiB")
print(f"soak: after it: resident {min(rss) / MiB:.1f} to {max(rss) / MiB:.1f} MiB "
      f"(last {rss[-1] / MiB:.1f}), device {min(dev) / MiB:.2f} to {max(dev) / MiB:.2f} MiB")
growth = rss[-1] - w["host_rss_bytes"]
bad = []
if max(dev) != min(dev) or dev[0] != w["device_bytes"]:
    bad.append("the device memory changed after warm-up")
if growth > max(0.02 * w["host_rss_bytes"], MiB):
    bad.append(f"the resident set grew by {growth / MiB:.1f} MiB")
if bad:
    sys.exit("soak: FAIL: " + "; ".join(bad))
print(f"soak: flat (resident {growth / MiB:+.2f} MiB from warm-up to the end)")
EOF
