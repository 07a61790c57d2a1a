#!/usr/bin/env bash
# --attention auto|fused|unfused (run/attention_option.h) end to end:
#   - bad input, one line and a non-zero exit before any step: an unknown value (train of
#     every kind, eval, decode), --attention fused with a model that needs the scores
#     (RealFormer, GAU; a RealFormer checkpoint's eval), --entropy-alert with fused, and an
#     unfused run whose scores cannot fit the device's memory (KILN_MEMORY_LIMIT) in train,
#     eval and decode, while the fused path is not refused at that limit;
#   - auto's one line where it falls back to unfused (RealFormer), and the flag never reaching
#     the checkpoint (a fused and an unfused run's checkpoints carry the same metadata);
#   - 200 training steps fused and unfused (dropout on: the same masks) give losses within
#     1e-4 relative, and eval's losses of one checkpoint agree on both paths.
#   host_attention.sh KILN WORKDIR [BACKEND]
set -u
. "$(dirname "$0")/host_common.sh"
host_setup "$1" "$2" "${3:-cpu}"

numbered_lines 300 "line %d: sing a song of sixpence, a pocket full of rye" >text.txt
for i in $(seq 1 60); do printf 'ab%d\t%dba\n' "$i" "$i"; done >pairs.tsv
sizes=(--layers 2 --heads 2 --dim 32 --batch 4 --backend "$backend" --log-every 50)
small=("${sizes[@]}" --block 32)

if [ "$backend" = cpu ]; then
  "$kiln" train --data text.txt --out good "${small[@]}" --steps 2 >/dev/null 2>&1 || fail "the small run"
  "$kiln" train --data text.txt --out realformer "${small[@]}" --steps 2 --residual-attention \
    --attention unfused >/dev/null 2>&1 || fail "the RealFormer run"
  for kind in gpt seq2seq bert; do
    data=text.txt
    [ "$kind" = seq2seq ] && data=pairs.tsv
    expect_one_line_error "train --model $kind --attention sideways" "--attention sideways is not one of auto, fused, unfused" \
      train --model "$kind" --data "$data" --out bad --steps 1 --attention sideways --backend cpu
  done
  expect_one_line_error "eval --attention sideways" "--attention sideways" \
    eval --ckpt good/model.safetensors --data text.txt --attention sideways --backend cpu
  expect_one_line_error "decode --attention sideways" "--attention sideways" \
    decode --ckpt good/model.safetensors --prompt "line" --attention sideways --backend cpu
  expect_one_line_error "fused with RealFormer" "--attention fused: --residual-attention (RealFormer)" \
    train --data text.txt --out bad "${small[@]}" --steps 1 --attention fused --residual-attention
  expect_one_line_error "fused with GAU" "--attention fused: --layer-type gau" \
    train --data text.txt --out bad "${small[@]}" --steps 1 --attention fused --layer-type gau --gau-s 16
  expect_one_line_error "fused with --entropy-alert" "--entropy-alert needs the attention probabilities" \
    train --data text.txt --out bad "${small[@]}" --steps 1 --attention fused --entropy-alert 1
  expect_one_line_error "eval of a RealFormer checkpoint, fused" "--attention fused: --residual-attention" \
    eval --ckpt realformer/model.safetensors --data text.txt --attention fused --backend cpu
  [ ! -e bad/model.safetensors ] || fail "a refused run wrote a checkpoint"

  # the memory rule: 1 MiB cannot hold the unfused scores of --block 256
  export KILN_MEMORY_LIMIT=1048576
  expect_one_line_error "unfused train beyond memory" "unfused attention at --block 256 needs at least .* has 1.0 MiB usable" \
    train --data text.txt --out big "${sizes[@]}" --block 256 --steps 1 --attention unfused
  grep -q '"step"' big/metrics.jsonl 2>/dev/null && fail "a refused run took a step"
  expect_one_line_error "unfused eval beyond memory" "unfused attention at n_positions 32, --batch 4096 needs at least" \
    eval --ckpt good/model.safetensors --data text.txt --attention unfused --batch 4096 --backend cpu
  KILN_MEMORY_LIMIT=1000 expect_one_line_error "unfused decode beyond memory" \
    "unfused attention at a window of [0-9]* tokens needs at least" \
    decode --ckpt good/model.safetensors --prompt "line" --attention unfused --backend cpu --max-new 2
  KILN_MEMORY_LIMIT=12x expect_one_line_error "a bad KILN_MEMORY_LIMIT" "KILN_MEMORY_LIMIT=12x" \
    train --data text.txt --out big "${small[@]}" --steps 1 --attention unfused
  "$kiln" train --data text.txt --out fusedbig "${sizes[@]}" --block 256 --steps 1 --attention fused \
    >out.txt 2>err.txt || fail "the fused path refused at a small memory limit: $(cat err.txt)"
  unset KILN_MEMORY_LIMIT
  echo "ok: the memory rule"

  "$kiln" train --data text.txt --out rf2 "${small[@]}" --steps 1 --residual-attention >out.txt 2>err.txt ||
    fail "auto with RealFormer: $(cat err.txt)"
  [ "$(grep -c 'attention unfused: --residual-attention' err.txt)" -eq 1 ] || fail "auto's line: $(cat err.txt)"
fi

# 200 steps on both paths: the same losses within 1e-4 relative
run=(train --data text.txt "${small[@]}" --steps 200 --eval-every 100 --eval-windows 4 --dropout 0.1 --seed 3)
"$kiln" "${run[@]}" --out fused --attention fused >fused.out 2>fused.err || fail "fused run: $(tail -2 fused.err)"
"$kiln" "${run[@]}" --out unfused --attention unfused >unfused.out 2>unfused.err ||
  fail "unfused run: $(tail -2 unfused.err)"
python3 - fused/metrics.jsonl unfused/metrics.jsonl <<'EOF' || fail "fused and unfused losses differ"
import json, sys
def losses(path):
    rows = [json.loads(l) for l in open(path)]
    return [(r["step"], k, r[k]) for r in rows for k in ("loss", "val_loss") if k in r]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
assert len(a) == len(b) and len(a) >= 200, (len(a), len(b))
worst = max(abs(x[2] - y[2]) / abs(y[2]) for x, y in zip(a, b))
print(f"fused vs unfused over {len(a)} losses: worst relative difference {worst:.3g}")
assert worst <= 1e-4, worst
EOF
# the choice is the run's: both checkpoints carry the same metadata
python3 - fused/model.safetensors unfused/model.safetensors <<'EOF' || fail "the checkpoints' headers differ"
import json, struct, sys
def meta(path):
    with open(path, "rb") as f:
        return json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))["__metadata__"]
assert meta(sys.argv[1]) == meta(sys.argv[2])
EOF
f=$("$kiln" eval --ckpt unfused/model.safetensors --data text.txt --attention fused --backend "$backend" 2>/dev/null)
u=$("$kiln" eval --ckpt unfused/model.safetensors --data text.txt --attention unfused --backend "$backend" 2>/dev/null)
python3 -c "import sys; a, b = float(sys.argv[1].split()[1]), float(sys.argv[2].split()[1]); \
assert abs(a - b) <= 1e-4 * abs(b), (a, b); print('eval: fused', a, 'unfused', b)" "$f" "$u" ||
  fail "eval fused '$f' vs unfused '$u'"

[ "$failures" -eq 0 ] && echo "host_attention: all checks passed"
[ "$failures" -eq 0 ]
