#!/usr/bin/env bash
# Golden outputs: runs a fixed set of kiln commands and saves what they produce, so that a
# change of shape (a refactor that must not change behaviour) can be checked against the
# outputs of the tree before it, byte for byte.
#
#   scripts/golden.sh KILN OUT_DIR          run the set with the program KILN, save into OUT_DIR
#   scripts/golden.sh --compare OLD NEW     compare two saved sets: every file must be identical
#
# What is saved: checkpoints and optimizer states (every byte), metrics.jsonl (every loss and
# statistic), the commands' standard output (losses, decodes, BLEU, accuracies), GGUF exports
# and quantized files, a 2-rank MPI run's weights and metrics, and `kiln verify --json` per
# backend. Timings are left out: fields and words of seconds, tokens/s, ETA, memory figures
# and the device's name and driver (they say where the run was, not what it computed).
# Deterministic by construction: one OpenMP thread per process, fixed seeds, CPU backend for
# the training runs (Vulkan and OpenCL runs are compared by verify's own pass/fail, which is
# what stays fixed across a refactor). Train, eval and decode run with --attention unfused, the
# path kiln had before the fused op (GOLDEN_ATTENTION=fused or auto runs them on another path,
# to see how far its results differ from the saved set by rounding).
set -euo pipefail

compare() {
  local old=$1 new=$2
  if diff -r "$old" "$new" >/dev/null; then
    echo "golden: identical ($(find "$old" -type f | wc -l) files)"
    return 0
  fi
  echo "golden: DIFFERENT"
  diff -rq "$old" "$new" || true
  return 1
}

if [ "${1:-}" = "--compare" ]; then
  compare "$2" "$3"
  exit
fi
[ $# -eq 2 ] || { echo "usage: scripts/golden.sh KILN OUT_DIR | --compare OLD NEW" >&2; exit 2; }
kiln=$(realpath "$1")
out=$(realpath -m "$2")
rm -rf "$out" && mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
info=$("$kiln" info 2>/dev/null || true)
att=(--attention "${GOLDEN_ATTENTION:-unfused}")

# untimed: drop the fields and words that are timings or say where a run happened.
untimed() {
  sed -E \
    -e 's/, "(tokens_per_s|host_rss_bytes|device_bytes|seconds|elapsed_s|ms|time_s|wall_s)": [^,}]*//g' \
    -e 's/"(seconds|elapsed_s|ms|time_s|wall_s|duration_s)": [0-9.eE+-]+,? ?//g' \
    -e 's/[0-9.]+ (tokens\/s|tok\/s|s elapsed|ms|s\b)//g' \
    -e 's/ETA [^ ,]*//g'
}

# save NAME FILE...: copy run outputs into the golden set under NAME/ (metrics untimed).
save() {
  local name=$1 f
  shift
  mkdir -p "$out/$name"
  for f in "$@"; do
    case "$f" in
      *.jsonl | *.json | *.out) untimed <"$f" >"$out/$name/$(basename "$f")" ;;
      *) cp "$f" "$out/$name/" ;;
    esac
  done
}

# run NAME CMD...: run a kiln command, keep its standard output, untimed, as NAME.out.
run() {
  local name=$1
  shift
  "$@" >"$name.out" 2>"$name.err" || { echo "golden: '$*' failed:"; tail -n 5 "$name.err"; exit 1; }
}

for i in $(seq 1 300); do
  echo "row $i: sing a song of sixpence, a pocket full of rye; four and twenty blackbirds baked in a pie"
done >text.txt
head -c 4000 text.txt >held.txt
gpt=(--data text.txt --layers 2 --heads 2 --dim 32 --block 32 --batch 4 --eval-windows 8 --log-every 5
     --dropout 0.1 --seed 7 --backend cpu --lr 3e-3 --warmup 5 "${att[@]}")

echo "golden: gpt fp32"
run gpt32_train "$kiln" train "${gpt[@]}" --steps 20 --eval-every 10 --out gpt32
run gpt32_eval "$kiln" eval --backend cpu "${att[@]}" --ckpt gpt32/model.safetensors --data held.txt
run gpt32_greedy "$kiln" decode --backend cpu "${att[@]}" --ckpt gpt32/model.safetensors --prompt "row 7" --max-new 40 --greedy
run gpt32_sample "$kiln" decode --backend cpu "${att[@]}" --ckpt gpt32/model.safetensors --prompt "row 7" --max-new 40 --seed 3
save gpt32 gpt32/model.safetensors gpt32/optimizer.safetensors gpt32/metrics.jsonl gpt32_*.out

echo "golden: gpt fp32, resumed"
run gpt32r_a "$kiln" train "${gpt[@]}" --steps 10 --eval-every 10 --out gpt32r
run gpt32r_b "$kiln" train "${gpt[@]}" --steps 20 --eval-every 10 --out gpt32r --resume
save gpt32r gpt32r/model.safetensors gpt32r/optimizer.safetensors gpt32r/metrics.jsonl gpt32r_*.out

echo "golden: gpt fp16"
run gpt16_train "$kiln" train "${gpt[@]}" --steps 20 --eval-every 10 --precision fp16 --out gpt16
run gpt16_eval "$kiln" eval --backend cpu "${att[@]}" --ckpt gpt16/model.safetensors --data held.txt --precision fp16
run gpt16_greedy "$kiln" decode --backend cpu "${att[@]}" --ckpt gpt16/model.safetensors --prompt "row 7" --max-new 40 \
  --greedy --precision fp16
save gpt16 gpt16/model.safetensors gpt16/optimizer.safetensors gpt16/metrics.jsonl gpt16_*.out

echo "golden: gpt with a BPE tokenizer and the stability options"
run tok_train "$kiln" tokenizer train --data text.txt --vocab 300 --out bpe.tok
run bpe_train "$kiln" train "${gpt[@]}" --tokenizer bpe.tok --steps 10 --eval-every 10 --norm post \
  --residual deepnorm --out bpe
run bpe_greedy "$kiln" decode --backend cpu "${att[@]}" --ckpt bpe/model.safetensors --prompt "row 7" --max-new 12 --greedy
save bpe bpe.tok bpe/model.safetensors bpe/metrics.jsonl bpe_*.out tok_train.out

echo "golden: GGUF export and quantize"
for t in f32 f16 q8_0; do
  run "export_$t" "$kiln" export --ckpt gpt32/model.safetensors --format gguf --type "$t" --out "gpt32-$t.gguf"
done
run quantize_q4_0 "$kiln" quantize --ckpt gpt32/model.safetensors --format q4_0 --out gpt32-q4_0.gguf
run quantize_q4_1 "$kiln" quantize --ckpt gpt32/model.safetensors --format q4_1 --out gpt32-q4_1.gguf
run q4_0_eval "$kiln" eval --backend cpu "${att[@]}" --ckpt gpt32-q4_0.gguf --data held.txt
run q4_0_greedy "$kiln" decode --backend cpu "${att[@]}" --ckpt gpt32-q4_0.gguf --prompt "row 7" --max-new 40 --greedy
save gguf gpt32-*.gguf export_*.out quantize_*.out q4_0_*.out

echo "golden: seq2seq"
for i in $(seq 1 200); do
  w=$(printf '%s' "abcdefghij" | cut -c "$((i % 7 + 1))-$((i % 7 + 4))")
  printf '%s %d\t%d %s\n' "$w" "$i" "$i" "$(echo "$w" | rev)"
done >pairs.tsv
head -n 20 pairs.tsv >pairs-test.tsv
s2s=(--model seq2seq --data pairs.tsv --dim 32 --heads 4 --layers 2 --max-len 16 --batch-tokens 256 --seed 3 --warmup 5
     --backend cpu "${att[@]}")
run s2s_train "$kiln" train "${s2s[@]}" --steps 20 --eval-every 10 --out s2s
run s2s_eval "$kiln" eval --backend cpu "${att[@]}" --ckpt s2s/model.safetensors --data pairs-test.tsv
run s2s_beam "$kiln" eval --backend cpu "${att[@]}" --ckpt s2s/model.safetensors --data pairs-test.tsv --beam 3
run s2s_decode "$kiln" decode --backend cpu "${att[@]}" --ckpt s2s/model.safetensors --input "cdef 9" --beam 3
save s2s s2s/model.safetensors s2s/optimizer.safetensors s2s/metrics.jsonl s2s_*.out

echo "golden: bert"
bert=(--model bert --data text.txt --layers 2 --heads 2 --dim 32 --block 32 --batch 4 --seed 5 --backend cpu --lr 3e-3 --warmup 5
      "${att[@]}")
run bert_train "$kiln" train "${bert[@]}" --steps 20 --eval-every 10 --out bert
run bert_eval "$kiln" eval --backend cpu "${att[@]}" --ckpt bert/model.safetensors --data held.txt
save bert bert/model.safetensors bert/optimizer.safetensors bert/metrics.jsonl bert/config.json bert_*.out

if command -v mpirun >/dev/null && grep -q "^data-parallel training: MPI" <<<"$info"; then
  echo "golden: 2-rank MPI"
  run mpi_train mpirun -q --oversubscribe -np 2 "$kiln" train "${gpt[@]}" --steps 10 --eval-every 10 --out mpi
  save mpi mpi/model.safetensors mpi/optimizer.safetensors mpi/metrics.jsonl mpi_train.out
else
  echo "golden: no MPI here; the 2-rank run is left out" | tee "$out/NO_MPI"
fi

echo "golden: kiln verify --json"
for b in cpu vulkan opencl; do
  grep -q "^$b:0" <<<"$info" || continue
  # verify's JSON: which cases ran and passed; error figures vary only with the device
  "$kiln" verify --backend "$b" --json "verify-$b.json" >/dev/null 2>&1 || true
  python3 - "verify-$b.json" >"verify_$b.out" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
def walk(x, path=""):
    if isinstance(x, dict):
        for k in sorted(x):
            if k in ("device", "driver", "seconds", "elapsed_s", "ms", "date", "kiln_version", "commit"):
                continue
            walk(x[k], path + "/" + k)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            walk(v, f"{path}[{i}]")
    else:
        print(path, json.dumps(x))
walk(doc)
EOF
  save verify "verify_$b.out"
done
echo "golden: saved $(find "$out" -type f | wc -l) files in $out"
