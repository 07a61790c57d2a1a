#!/usr/bin/env bash
# Data-parallel scaling of `kiln train` on this machine, with PyTorch's DistributedDataParallel
# (gloo) on the same model measured in the same run as the peer (docs/parallel.md).
#
#   scripts/bench_parallel.sh [RANKS [STEPS]]
#
# Each rank trains nanoGPT's CPU model (4 layers, dim 128, block 64, batch 12: 0.8M weights)
# on one thread; the baseline is one such process. It prints, for kiln and PyTorch, tokens/s
# of 1 and of RANKS processes and the scaling efficiency (tokens/s of RANKS / (RANKS x tokens/s
# of 1)), and for kiln what each step spends on the gradient sum and how many bytes it sums.
# Environment: KILN (default build/host/kiln), BACKEND (cpu), DEVICES (--devices for the ranks,
# e.g. vulkan:0,vulkan:1; the baseline runs on the first), BUCKET_MB (kiln's --bucket-mb, and
# DDP's bucket_cap_mb; default: each one's own), DATA (the text; default: generated text,
# since speed does not depend on it; docs/parallel.md's figures used tinyshakespeare, from
# https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt),
# PYTHON (/usr/bin/python3; NO_TORCH=1 skips PyTorch).
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${1:-2}
steps=${2:-60}
kiln=$(realpath "${KILN:-build/host/kiln}")
backend=${BACKEND:-cpu}
python=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data=${DATA:-}
if [ -z "$data" ]; then
  data=$work/text.txt
  for i in $(seq 1 20000); do echo "line $i: to be, or not to be, that is the question"; done >"$data"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
model=(--data "$data" --layers 4 --heads 4 --dim 128 --block 64 --batch 12 --steps "$steps" --eval-every 0
       --eval-windows 1 --log-every 1000 --trust-device ${BUCKET_MB:+--bucket-mb "$BUCKET_MB"})
if [ -n "${DEVICES:-}" ]; then
  one=(--devices "${DEVICES%%,*}")
  many=(--devices "$DEVICES")
else
  one=(--backend "$backend")
  many=(--backend "$backend")
fi

# median_tokens DIR: the median tokens/s of the run's steps after its first 5 (kernel
# compilation, caches), from metrics.jsonl (timed around the step alone, not the evaluation).
median_tokens() {
  "$python" -c 'import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl")]
print(round(statistics.median(r["tokens_per_s"] for r in rows[5:])))' "$1"
}

"$kiln" train "${model[@]}" "${one[@]}" --out "$work/one" >/dev/null 2>"$work/one.err" || { cat "$work/one.err"; exit 1; }
mpirun -q --oversubscribe -np "$ranks" "$kiln" train "${model[@]}" "${many[@]}" --out "$work/many" >/dev/null \
  2>"$work/many.err" || { cat "$work/many.err"; exit 1; }
k1=$(median_tokens "$work/one")
kn=$(median_tokens "$work/many")
keff=$(awk -v a="$k1" -v b="$kn" -v n="$ranks" 'BEGIN { printf "%.2f", b / (n * a) }')
echo "kiln ($(sed -n 's/^kiln train: running on //p' "$work/one.err")): 1 rank $k1 tokens/s, $ranks ranks $kn tokens/s:" \
  "scaling efficiency $keff"
sed -n 's/^kiln train: data parallel over /  /p' "$work/many.err"
sed -n "s/^kiln train: the ranks' weights /  the ranks' weights /p" "$work/many.err"

if [ "${NO_TORCH:-0}" = 1 ] || ! "$python" -c "import torch.distributed" 2>/dev/null; then
  echo "pytorch: not measured"
  exit 0
fi
torch=(samples/nanogpt_torch.py --bench --layers 4 --heads 4 --dim 128 --block 64 --batch 12 --steps "$steps"
       --threads 1 ${BUCKET_MB:+--bucket-mb "$BUCKET_MB"})
t1=$("$python" "${torch[@]}" | sed -n 's/^tokens_per_s //p')
tn=$("$python" "${torch[@]}" --ranks "$ranks" | sed -n 's/^tokens_per_s //p')
teff=$(awk -v a="$t1" -v b="$tn" -v n="$ranks" 'BEGIN { printf "%.2f", b / (n * a) }')
echo "pytorch DistributedDataParallel (gloo, cpu): 1 rank ${t1%.*} tokens/s, $ranks ranks ${tn%.*} tokens/s:" \
  "scaling efficiency $teff"
awk -v k="$kn" -v t="$tn" -v ke="$keff" -v te="$teff" -v n="$ranks" \
  'BEGIN { printf "kiln / pytorch at %d ranks: %.2f (tokens/s); scaling efficiency %.2f vs %.2f\n", n, k / t, ke, te }'
