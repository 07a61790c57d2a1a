#!/usr/bin/env bash
# Mixed-precision training in the kiln program (--precision fp16):
#  1. a forced overflow: a first loss scale of 2^40 overflows f16 gradients, so the first
#     steps are skipped while the scale backs off (halving at each), then training
#     converges. Checked row by row in metrics.jsonl: loss_scale = 2^40 / 2^skipped_steps,
#     a skipped step is exactly one whose grad_norm is null, Adam's step counter counts
#     only the steps not skipped, and the loss falls once the scale fits;
#  2. --resume in fp16 continues exactly: 20 uninterrupted steps and 10 plus a resumed 10
#     end with the same metrics (loss scale and skipped count included), val loss, weights
#     and optimizer state, with the scale growing every 3 clean steps so that the scaler's
#     counter is mid-interval at the checkpoint;
#  3. eval and decode in fp16 read the f32 checkpoint (eval's loss within 0.01 of fp32's);
#  4. on Vulkan, a device without 16-bit storage (minimum-limits mode) is refused in one line.
#   host_precision.sh KILN WORKDIR [BACKEND]
set -eu
. "$(dirname "$0")/host_common.sh"
host_setup "$@"
numbered_lines 400 "row %d: sing a song of sixpence, a pocket full of rye" >text.txt
status=0
fail() { echo "FAIL: $*"; status=1; }

# ---- 1. forced overflow ----
run=(--data text.txt --backend "$backend" --precision fp16 --layers 2 --heads 2 --dim 16
     --block 16 --batch 4 --lr 3e-3 --min-lr 3e-3 --warmup 2 --eval-every 0 --eval-windows 8
     --seed 5 --log-every 5)
"$kiln" train "${run[@]}" --out overflow --steps 50 --loss-scale-init 1099511627776 \
  --loss-scale-interval 1000 >overflow.out 2>overflow.err || { cat overflow.err; exit 1; }
grep -q '  S 3.43597e+10  ' overflow.err || fail "the progress lines do not show the scale (S 2^35 at step 5)"
"$py" - overflow/metrics.jsonl overflow/optimizer.safetensors overflow.out <<'EOF' || status=1
import json, struct, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
with open(sys.argv[2], "rb") as f:
    meta = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))["__metadata__"]
val = float(open(sys.argv[3]).read().split()[-1])
ok = True
def check(cond, what):
    global ok
    if not cond:
        print("FAIL:", what)
        ok = False
skipped_before = 0
for r in rows:
    skipped_now = r["skipped_steps"] - skipped_before
    check(skipped_now in (0, 1), f"step {r['step']}: skipped_steps went from {skipped_before} to {r['skipped_steps']}")
    check((r["grad_norm"] is None) == (skipped_now == 1),
          f"step {r['step']}: grad_norm {r['grad_norm']} but skipped {skipped_now}")
    check(r["loss_scale"] == 2.0 ** (40 - r["skipped_steps"]),
          f"step {r['step']}: loss_scale {r['loss_scale']} after {r['skipped_steps']} backoffs from 2^40")
    skipped_before = r["skipped_steps"]
skipped = rows[-1]["skipped_steps"]
first_clean = next((r for r in rows if r["grad_norm"] is not None), None)
check(rows[0]["grad_norm"] is None, "the first step (scale 2^40) was not skipped")
check(0 < skipped < len(rows) - 20, f"{skipped} of {len(rows)} steps skipped: expected a backoff, then 20+ clean steps")
check(int(meta["skipped_steps"]) == skipped and float(meta["loss_scale"]) == rows[-1]["loss_scale"],
      f"optimizer.safetensors has scale {meta.get('loss_scale')} and {meta.get('skipped_steps')} skipped")
check(int(meta["adam_steps"]) == len(rows) - skipped,
      f"Adam counted {meta['adam_steps']} steps; {len(rows)} steps minus {skipped} skipped")
check(meta["precision"] == "fp16", "optimizer.safetensors does not say fp16")
# converging: from ln(256) = 5.55 at the start to well below it
check(first_clean is not None and rows[-1]["loss"] < first_clean["loss"] - 1.0,
      f"the loss did not fall by 1 after the scale settled: {first_clean and first_clean['loss']} -> {rows[-1]['loss']}")
check(val < 4.5, f"val loss {val} after {len(rows) - skipped} clean steps: not converging")
print(f"forced overflow: {skipped} steps skipped, scale 2^40 -> {rows[-1]['loss_scale']:g}, "
      f"loss {rows[0]['loss']:.3f} -> {rows[-1]['loss']:.3f}, val loss {val}")
sys.exit(0 if ok else 1)
EOF

# ---- 2. exact resume in fp16 ----
resume=(--data text.txt --backend "$backend" --precision fp16 --layers 2 --heads 2 --dim 16
        --block 16 --batch 3 --lr 2e-3 --min-lr 2e-3 --warmup 4 --dropout 0.1 --grad-accum 2
        --eval-every 5 --eval-windows 8 --seed 11 --loss-scale-init 4194304
        --loss-scale-interval 3)
expect_exact_resume "${resume[@]}" || status=1
# the scaler must have been at work after the checkpoint too
[ "$(sed -n '10,20p' whole/metrics.jsonl | grep -o '"loss_scale": [^,]*' | sort -u | wc -l)" -ge 2 ] ||
  fail "the loss scale did not change between steps 10 and 20"
grep -q '"skipped_steps": [1-9]' whole/metrics.jsonl || fail "no step was skipped (scale 2^22)"

# ---- 3. eval and decode in fp16 ----
e32=$("$kiln" eval --ckpt whole/model.safetensors --data text.txt --backend "$backend" 2>/dev/null | awk '{print $2}')
e16=$("$kiln" eval --ckpt whole/model.safetensors --data text.txt --backend "$backend" --precision fp16 2>/dev/null | awk '{print $2}')
echo "eval: fp32 $e32, fp16 $e16"
awk -v a="$e32" -v b="$e16" 'BEGIN { d = a - b; exit !(a > 0 && b > 0 && d < 0.01 && d > -0.01) }' ||
  fail "eval in fp16 ($e16) is not within 0.01 of fp32 ($e32)"
"$kiln" decode --ckpt whole/model.safetensors --backend "$backend" --precision fp16 \
  --prompt "row 7" --max-new 24 --greedy >decode.out 2>decode.err || fail "decode in fp16: $(tail -n 1 decode.err)"
[ "$(wc -c <decode.out)" -eq 24 ] || fail "decode in fp16 printed $(wc -c <decode.out) bytes, expected 24"

# ---- 5. kiln bench precision: fp16 halves gradients and activations ----
"$kiln" bench precision --backend "$backend" --layers 1 --heads 2 --dim 16 --block 16 --batch 4 \
  --steps 2 --warmup-steps 1 >bench.out 2>bench.err || fail "kiln bench precision: $(tail -n 1 bench.err)"
ratio_of() { grep "^  $1  " bench.out | sed 's/  */ /g' | awk '{ for (i = 1; i <= NF; i++) if ($i == "MiB") last = i; print $(last + 1) }'; }
for expect in "weights:1.50" "gradients:0.50" "optimizer state:1.00" "weights (eval, decode):0.50"; do
  [ "$(ratio_of "${expect%%:*}")" = "${expect#*:}" ] || fail "bench precision: ${expect%%:*} fp16/fp32 is $(ratio_of "${expect%%:*}"), expected ${expect#*:}"
done
awk -v r="$(ratio_of activations)" 'BEGIN { exit !(r > 0 && r < 0.75) }' ||
  fail "bench precision: activations fp16/fp32 is $(ratio_of activations), expected well below 1"

# ---- 4. a device without f16 storage is refused in one line ----
# Vulkan's minimum-limits mode reports no 16-bit storage (the Vulkan minimum).
if [ "$backend" = vulkan ]; then
  if KILN_VK_MIN_LIMITS=1 "$kiln" train --data text.txt --backend vulkan --precision fp16 --out nof16 \
      --steps 1 >/dev/null 2>nof16.err; then
    fail "fp16 training on a device without 16-bit storage was not refused"
  fi
  [ "$(wc -l <nof16.err)" -eq 1 ] && grep -q '^kiln: error: .*cannot store f16.*--precision fp32' nof16.err ||
    fail "the refusal is not one clear line: $(cat nof16.err)"
fi

[ $status -eq 0 ] && echo "ok: fp16 training backs off, skips, converges and resumes exactly"
exit $status
