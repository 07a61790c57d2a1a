#!/usr/bin/env bash
# Data-parallel training over MPI (cli/train_parallel.h, docs/parallel.md):
#   - `mpirun -np 2 kiln train` follows the single process with --grad-accum 2 of the same
#     seed step for step: every step's loss within 1e-5 relative over 50 steps, the final
#     weights within 1e-5 (the only difference is the order of the gradient sums), with
#     dropout on (each rank's micro-batches take the single process's RNG streams) and
#     small buckets (several reductions per step, started during the backward);
#   - one rank on Vulkan and the other on OpenCL, the same (when this machine has both);
#   - fp16: the f16 gradient sums, the ranks' weights identical, the losses close;
#   - --model llama (the Llama family's block), BERT and the encoder-decoder: the same
#     trainer, the same agreement (the encoder-
#     decoder's weights within 1e-4: Adam turns its near-zero gradients' last bits into more);
#   - a checkpoint of 2 ranks resumes in one process with --grad-accum 2 and the reverse,
#     ending as the uninterrupted run; another global batch resumes too, saying so;
#   - a rank that fails (KILN_FAULT: device lost) ends the job within seconds with one line
#     naming it; a rank killed with SIGKILL too; the checkpoint on disk loads either way;
#   - bad --devices: one line.
# Skipped (77) when mpirun is missing or kiln was built without MPI.
#   host_mpi.sh KILN WORKDIR
set -u
. "$(dirname "$0")/host_common.sh"
host_setup "$1" "$2" cpu
command -v mpirun >/dev/null || { echo "skipped: no mpirun (apt-get install openmpi-bin libopenmpi-dev)"; exit 77; }
"$kiln" info 2>/dev/null | grep -q "^data-parallel training: MPI" ||
  { echo "skipped: this kiln was built without MPI"; exit 77; }
# CI runs as root, which Open MPI refuses unless told; one thread per rank on 2 cores
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
# -q: Open MPI's own banners off, so that kiln's one line is what a failure prints;
# --oversubscribe: CI machines may have fewer cores than ranks
mpi=(mpirun -q --oversubscribe -np 2)

numbered_lines 400 "row %d: sing a song of sixpence, a pocket full of rye; four and twenty blackbirds" >text.txt
gpt=(--data text.txt --layers 2 --heads 2 --dim 32 --block 32 --batch 4 --eval-windows 16 --log-every 10
     --dropout 0.1 --seed 5 --trust-device)

# compare_runs WHAT A B LOSS_RTOL WEIGHT_ATOL: A and B (run directories) logged the same steps
# with every loss within LOSS_RTOL relative, and their weights are within WEIGHT_ATOL.
compare_runs() {
  local out
  if out=$("$py" - "$2" "$3" "$4" "$5" <<'EOF'
import array, json, struct, sys
a_dir, b_dir, rtol, atol = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
rows = [[json.loads(l) for l in open(d + "/metrics.jsonl")] for d in (a_dir, b_dir)]
assert [r["step"] for r in rows[0]] == [r["step"] for r in rows[1]], "the runs logged different steps"
worst = max(abs(x["loss"] - y["loss"]) / abs(x["loss"]) for x, y in zip(*rows))
def tensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    head.pop("__metadata__", None)
    out = {}
    for name, t in head.items():
        b, e = t["data_offsets"]
        out[name] = array.array("f", raw[8 + n + b:8 + n + e])
    return out
wa, wb = tensors(a_dir + "/model.safetensors"), tensors(b_dir + "/model.safetensors")
assert wa.keys() == wb.keys(), "different weights"
diff = max(abs(x - y) for k in wa for x, y in zip(wa[k], wb[k]))
print(f"{len(rows[0])} steps, worst loss difference {worst:.3g} relative, weights within {diff:.3g}")
sys.exit(0 if worst <= rtol and diff <= atol else 1)
EOF
  ); then
    echo "ok   $1: $out"
  else
    fail "$1: $out"
  fi
}

# ---- two cpu ranks against one process with --grad-accum 2 ----
"$kiln" train "${gpt[@]}" --backend cpu --steps 50 --eval-every 25 --grad-accum 2 --out single >/dev/null 2>single.err ||
  { cat single.err; exit 1; }
if "${mpi[@]}" "$kiln" train "${gpt[@]}" --backend cpu --steps 50 --eval-every 25 --bucket-mb 0.02 --out ranks \
    >ranks.out 2>ranks.err; then
  compare_runs "2 cpu ranks vs --grad-accum 2" single ranks 1e-5 1e-5
  grep -q "buckets; per step" ranks.err || fail "no reduction report: $(tail -n 3 ranks.err)"
  grep -q "the ranks' weights are identical" ranks.err || fail "the cpu ranks' weights differ: $(tail -n 1 ranks.err)"
  # rank 0 alone reports: one progress line per --log-every, one val loss
  [ "$(grep -c '^val loss' ranks.out)" -eq 1 ] || fail "val loss printed $(grep -c '^val loss' ranks.out) times"
else
  fail "mpirun -np 2 kiln train: $(tail -n 3 ranks.err)"
fi

# ---- resume across the number of ranks ----
"$kiln" train "${gpt[@]}" --backend cpu --steps 20 --eval-every 10 --grad-accum 2 --out whole >/dev/null 2>&1
"${mpi[@]}" "$kiln" train "${gpt[@]}" --backend cpu --steps 10 --eval-every 10 --out two_then_one >/dev/null 2>&1 &&
  "$kiln" train "${gpt[@]}" --backend cpu --steps 20 --eval-every 10 --grad-accum 2 --out two_then_one --resume \
    >/dev/null 2>&1 &&
  compare_runs "2 ranks for 10 steps, resumed by 1 process with --grad-accum 2" whole two_then_one 1e-5 1e-5 ||
  fail "2 ranks then 1 process: a run failed"
"$kiln" train "${gpt[@]}" --backend cpu --steps 10 --eval-every 10 --grad-accum 2 --out one_then_two >/dev/null 2>&1 &&
  "${mpi[@]}" "$kiln" train "${gpt[@]}" --backend cpu --steps 20 --eval-every 10 --out one_then_two --resume \
    >/dev/null 2>&1 &&
  compare_runs "1 process for 10 steps, resumed by 2 ranks" whole one_then_two 1e-5 1e-5 ||
  fail "1 process then 2 ranks: a run failed"
# another global batch: the run goes on, and says so
"${mpi[@]}" "$kiln" train "${gpt[@]}" --backend cpu --steps 30 --eval-every 10 --grad-accum 2 --out one_then_two \
  --resume >/dev/null 2>resume4.err
rc=$?
if [ $rc -eq 0 ] && grep -q "^kiln train: the run had 2 micro-batches per step (--grad-accum x ranks), this one has 4" \
    resume4.err && [ "$(tail -n 1 one_then_two/metrics.jsonl | sed 's/.*"step": \([0-9]*\).*/\1/')" = 30 ]; then
  echo "ok   resumed with 4 micro-batches per step where the run had 2: $(grep 'micro-batches' resume4.err)"
else
  fail "a resume with another global batch: exit $rc, $(grep -v '^step' resume4.err)"
fi

# ---- fp16: f16 gradients summed, loss scaling agreed ----
"$kiln" train "${gpt[@]}" --backend cpu --steps 30 --eval-every 30 --grad-accum 2 --precision fp16 --out half1 \
  >/dev/null 2>&1
if "${mpi[@]}" "$kiln" train "${gpt[@]}" --backend cpu --steps 30 --eval-every 30 --precision fp16 --bucket-mb 0.02 \
    --out half2 >/dev/null 2>half2.err; then
  # f16 sums round once more than the single process's in-place accumulation
  compare_runs "fp16: 2 ranks vs --grad-accum 2" half1 half2 1e-4 1e-3
  grep -q "the ranks' weights are identical" half2.err || fail "fp16: the ranks' weights differ"
else
  fail "fp16 under mpirun: $(tail -n 3 half2.err)"
fi

# ---- the Llama family's block (GQA, rope, SwiGLU, RMSNorm, untied) through the same trainer ----
llama=(--model llama --kv-heads 1 --untied --data text.txt --layers 2 --heads 2 --dim 32 --block 32 --batch 4
       --steps 20 --eval-every 20 --dropout 0.1 --seed 5 --trust-device --backend cpu)
"$kiln" train "${llama[@]}" --grad-accum 2 --out llama1 >/dev/null 2>&1
if "${mpi[@]}" "$kiln" train "${llama[@]}" --out llama2 >/dev/null 2>llama2.err; then
  compare_runs "--model llama: 2 ranks vs --grad-accum 2" llama1 llama2 1e-5 1e-5
else
  fail "--model llama under mpirun: $(tail -n 3 llama2.err)"
fi

# ---- BERT and the encoder-decoder train through the same trainer ----
bert=(--model bert --data text.txt --layers 2 --heads 2 --dim 32 --block 32 --batch 4 --steps 20 --eval-every 20
      --dropout 0.1 --backend cpu)
"$kiln" train "${bert[@]}" --grad-accum 2 --out bert1 >/dev/null 2>&1
"${mpi[@]}" "$kiln" train "${bert[@]}" --out bert2 >/dev/null 2>&1 &&
  compare_runs "bert: 2 ranks vs --grad-accum 2" bert1 bert2 1e-5 1e-5 || fail "bert under mpirun failed"
"$py" -c '
import random
r = random.Random(1)
for i in range(300):
    w = "".join(r.choice("abcde") for _ in range(r.randint(2, 6)))
    print(w + "\t" + w[::-1])' >pairs.tsv
s2s=(--model seq2seq --data pairs.tsv --dim 32 --heads 4 --layers 2 --max-len 12 --batch-tokens 256 --steps 20
     --eval-every 20 --backend cpu)
"$kiln" train "${s2s[@]}" --grad-accum 2 --out s2s1 >/dev/null 2>&1
"${mpi[@]}" "$kiln" train "${s2s[@]}" --out s2s2 >/dev/null 2>&1 &&
  compare_runs "seq2seq: 2 ranks vs --grad-accum 2" s2s1 s2s2 1e-5 1e-4 || fail "seq2seq under mpirun failed"

# ---- a Vulkan rank beside an OpenCL rank ----
if "$kiln" info 2>/dev/null | grep -q "^vulkan:0" && "$kiln" info 2>/dev/null | grep -q "^opencl:0"; then
  if "${mpi[@]}" "$kiln" train "${gpt[@]}" --devices vulkan:0,opencl:0 --steps 50 --eval-every 25 --bucket-mb 0.02 \
      --out mixed >/dev/null 2>mixed.err; then
    grep -q "rank 1 of 2 running on opencl" mixed.err || fail "rank 1 did not run on OpenCL"
    # two devices' kernels: their updates may differ in the last bit
    compare_runs "vulkan:0 + opencl:0 vs cpu --grad-accum 2" single mixed 1e-5 1e-5
    grep "ranks' weights" mixed.err | sed 's/^/     /'
  else
    fail "vulkan:0 + opencl:0: $(tail -n 3 mixed.err)"
  fi
else
  echo "skip vulkan + opencl ranks: this machine lacks one of them"
fi

# ---- faults: the job ends within seconds, one line names the rank, the checkpoint loads ----
# expect_job_ended WHAT SECONDS DIR: the job (exit $rc, stderr in $1.err) failed in under 15 s
# with one "kiln: error:" line that names rank 1, and DIR's checkpoint evaluates.
expect_job_ended() {
  local what=$1 seconds=$2 dir=$3 errors
  errors=$(grep -c '^kiln: error: ' "$what.err")
  if [ "$rc" -eq 0 ] || [ "$seconds" -ge 15 ] || [ "$errors" -ne 1 ] || ! grep -q '^kiln: error: rank 1' "$what.err"; then
    fail "$what: exit $rc after ${seconds}s, $errors error lines:"
    sed 's/^/    /' "$what.err" | grep -v '^    step' | tail -n 5
  elif ! "$kiln" eval --ckpt "$dir/model.safetensors" --data text.txt --backend cpu >/dev/null 2>&1; then
    fail "$what: the checkpoint in $dir does not load"
  else
    echo "ok   $what: ended ${seconds}s after, $(grep '^kiln: error:' "$what.err"); the checkpoint loads"
  fi
}
long=(--backend cpu --steps 100000 --eval-every 5)

start=$SECONDS
mpirun -q --oversubscribe -np 1 "$kiln" train "${gpt[@]}" "${long[@]}" --out lost : \
  -np 1 env KILN_FAULT=device-lost@4000 "$kiln" train "${gpt[@]}" "${long[@]}" --out lost >/dev/null 2>lost.err
rc=$?
expect_job_ended lost $((SECONDS - start)) lost

# SIGKILL: rank 1 runs through a wrapper that records its pid
cat >rank1.sh <<'EOF'
#!/bin/sh
echo $$ >rank1.pid
exec "$@"
EOF
chmod +x rank1.sh
rm -f rank1.pid killed.rc
(mpirun -q --oversubscribe -np 1 "$kiln" train "${gpt[@]}" "${long[@]}" --out killed : \
  -np 1 ./rank1.sh "$kiln" train "${gpt[@]}" "${long[@]}" --out killed >/dev/null 2>killed.err; echo $? >killed.rc) &
for _ in $(seq 300); do [ -f killed/model.safetensors ] && [ -f rank1.pid ] && break; sleep 0.1; done
sleep 1
start=$SECONDS
kill -9 "$(cat rank1.pid)"
for _ in $(seq 300); do [ -f killed.rc ] && break; sleep 0.1; done
rc=$(cat killed.rc 2>/dev/null || echo 0)
expect_job_ended killed $((SECONDS - start)) killed
wait

# ---- bad input ----
"${mpi[@]}" "$kiln" train "${gpt[@]}" --devices cpu --steps 2 --out bad >/dev/null 2>bad.err
rc=$?
if [ $rc -ne 0 ] && [ "$(grep -c '^kiln: error: ' bad.err)" -eq 1 ] &&
    grep -q "^kiln: error: rank 0: --devices lists fewer devices than the 2 ranks" bad.err; then
  echo "ok   --devices too short: $(cat bad.err)"
else
  fail "--devices too short: exit $rc, $(cat bad.err)"
fi

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all data-parallel checks passed"
