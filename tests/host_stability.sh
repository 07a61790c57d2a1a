#!/usr/bin/env bash
# The stability options through the `kiln` program: each trains a few steps, its checkpoint
# carries the option to `kiln eval` and `kiln decode` (the cached and uncached decodes agree),
# a resume with the option is bit-exact, the evaluations log attention entropy and per-layer
# gradient norms, and the combinations that make no sense are refused in one line before
# any work.
#   host_stability.sh KILN WORKDIR [BACKEND]
set -eu
. "$(dirname "$0")/host_common.sh"
host_setup "$@"
numbered_lines 300 "line %d: the quality of mercy is not strained" >text.txt
# the held-out split (the last tenth of the bytes), for `kiln eval` to score as training did
size=$(stat -c %s text.txt)
tail -c $((size / 10)) text.txt >val.txt
# noam sets its own rate: its runs leave --lr out
common=(--data text.txt --backend "$backend" --layers 2 --heads 2 --dim 16 --block 16 --batch 3
        --warmup 2 --eval-every 3 --eval-windows 4 --seed 5)
base=("${common[@]}" --lr 2e-3 --min-lr 2e-3)
status=0
fail() { echo "FAIL: $*"; status=1; }

# refused, one line, exit 1, nothing written
refuse() {
  local expect=$1; shift
  if "$kiln" train "${common[@]}" --out refused --steps 2 "$@" >out.txt 2>err.txt; then
    fail "accepted: $*"; return
  fi
  [ "$(wc -l <err.txt)" -eq 1 ] || fail "more than one line for $*: $(cat err.txt)"
  grep -q -- "$expect" err.txt || fail "for $* expected '$expect', got: $(cat err.txt)"
  [ ! -e refused ] || fail "refused run $* created its directory"
}
refuse "needs norm post" --residual admin
refuse "needs norm post" --residual deepnorm --norm none
refuse "same heads" --residual-attention --layer-type gau
refuse "is not one of pre, post, none" --norm sideways
refuse "is not one of plain, rezero, admin, deepnorm" --residual skip
refuse "applies to --residual admin only" --admin-init closed
refuse "applies to --layer-type gau only" --gau-s 8
refuse "must be STEP:T" --attn-temperature-at 5
refuse "steps must increase" --attn-temperature-at 5:0.5 --attn-temperature-at 3:0.2
refuse "is not one of cosine, noam, inverse-sqrt, linear, constant" --lr-schedule steep
refuse "is not one of adamw, adam, radam" --optimizer sgd
refuse "does not apply to --lr-schedule noam" --lr-schedule noam --lr 1e-3
refuse "applies to --lr-schedule noam only" --noam-factor 2

options=("--norm post" "--norm none --residual rezero" "--norm post --residual admin"
         "--norm post --residual admin --admin-init closed" "--norm post --residual deepnorm"
         "--sigma-reparam" "--norm post --residual-attention --attn-temperature 0.7"
         "--layer-type gau --gau-s 8" "--layer-type gau --norm post --gau-attn softmax --gau-s 8 --sigma-reparam"
         "--attn-temperature-at 4:0.3" "--optimizer radam --lr-schedule inverse-sqrt" "--optimizer adam --lr-schedule linear"
    "--lr-schedule noam --noam-factor 0.5 --label-smoothing 0.1")
i=0
for opt in "${options[@]}"; do
  i=$((i + 1))
  # shellcheck disable=SC2206
  flags=($opt)
  run_base=("${base[@]}")
  case "$opt" in *noam*) run_base=("${common[@]}") ;; esac
  "$kiln" train "${run_base[@]}" "${flags[@]}" --out "run$i" --steps 6 >"train$i.out" 2>"train$i.err" ||
    { fail "$opt: train failed: $(tail -n 1 "train$i.err")"; continue; }
  # the evaluations log the monitoring: 2 layers each
  $py - "run$i/metrics.jsonl" "$opt" <<'PY' || fail "$opt: monitoring rows"
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ev = [r for r in rows if "val_loss" in r]
assert len(ev) == 2, ev
for r in ev:
    assert len(r["attn_entropy"]) == 2 and len(r["grad_norm_layers"]) == 2, r
    assert all(g is not None and g > 0 for g in r["grad_norm_layers"]), r
    relu2_gau = "gau" in sys.argv[2] and "softmax" not in sys.argv[2]
    if relu2_gau:
        assert r["attn_entropy"] == [None, None] and r["attn_entropy_min"] is None, r
    else:
        assert all(0 <= e <= math.log(16) + 1e-6 for e in r["attn_entropy"]), r
        assert r["attn_entropy_min"] <= min(r["attn_entropy"]) + 1e-9, r
PY
  # eval reads the option back from the checkpoint: on the held-out bytes, in batches of 3,
  # the same loss as training's last evaluation
  want=$(sed -n 's/^val loss //p' "train$i.out")
  got=$("$kiln" eval --ckpt "run$i/model.safetensors" --data val.txt --batch 3 --backend "$backend" 2>/dev/null |
        sed -n 's/^loss //p')
  [ -n "$got" ] && got=$(printf '%.4f' "$got")
  [ -n "$want" ] && [ "$want" = "$got" ] || fail "$opt: eval gives '$got', training ended at '$want'"
  a=$("$kiln" decode --ckpt "run$i/model.safetensors" --prompt "line" --max-new 12 --greedy --backend "$backend" 2>/dev/null | od -An -tx1)
  b=$("$kiln" decode --ckpt "run$i/model.safetensors" --prompt "line" --max-new 12 --greedy --no-cache --backend "$backend" 2>/dev/null | od -An -tx1)
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "$opt: cached and uncached greedy decodes differ"
  echo "ok: $opt (val loss $want)"
done

# label smoothing changes the training loss from the first step (same weights), not the
# validation loss's definition
first_loss() { $py -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())['loss'])" "$1"; }
"$kiln" train "${base[@]}" --out plain --steps 1 >/dev/null 2>&1 || fail "plain one-step run"
"$kiln" train "${base[@]}" --out smooth --steps 1 --label-smoothing 0.2 >/dev/null 2>&1 || fail "smoothed one-step run"
$py - "$(first_loss plain/metrics.jsonl)" "$(first_loss smooth/metrics.jsonl)" <<'PY' || fail "label smoothing does not reach the loss"
import sys
plain, smooth = map(float, sys.argv[1:])
# near-uniform predictions at init: (1 - e) CE + e mean(-log p) stays within a few percent
assert plain != smooth and abs(smooth - plain) < 0.05 * plain, (plain, smooth)
PY

# a resume with another optimizer is refused; radam with noam and smoothing resumes exactly
"$kiln" train "${base[@]}" --out opt_a --steps 3 >/dev/null 2>&1 || fail "adamw run"
"$kiln" train "${base[@]}" --out opt_a --steps 6 --resume --optimizer radam >out.txt 2>err.txt &&
  fail "resume with another --optimizer accepted"
grep -q "cannot resume: the optimizer is radam here but adamw" err.txt || fail "optimizer switch: $(cat err.txt)"
mkdir -p radam && cd radam && cp ../text.txt . &&
  { expect_exact_resume "${common[@]}" --optimizer radam --lr-schedule noam --noam-factor 0.5 --label-smoothing 0.1 ||
    status=1; }
cd ..

# a resume keeps the options and is bit-exact (sigma-reparam's u, v and the temperature
# schedule included); a differing block option is refused
expect_exact_resume "${base[@]}" --norm post --residual admin --sigma-reparam --attn-temperature-at 12:0.5 ||
  status=1
"$kiln" train "${base[@]}" --out split --steps 22 --resume --norm pre >out.txt 2>err.txt &&
  fail "resume with a different --norm accepted"
grep -q "differs from the model" err.txt || fail "resume with a different --norm: $(cat err.txt)"
[ $status -eq 0 ] && echo "ok: every option trains, evaluates, decodes and resumes"
exit $status
