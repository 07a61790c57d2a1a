#!/usr/bin/env bash
# `kiln verify` and the first-use device check (host/cli/verify.c, device_check.c):
#   - every case of the library's table runs and passes on BACKEND, and every case that
#     `kiln verify --list` names appears in the run (one table for users and tests);
#   - --json holds the same runs; bad options get one line and a non-zero exit;
#   - on a GPU backend, a wrong kernel (KILN_FAULT=wrong:KERNEL, core/fault.h) fails exactly
#     the cases that use it, named with their precision and GEMM variant, and nothing else;
#   - train refuses a device that fails the quick check with one line naming the case and
#     what to do, remembers a pass (a later wrong kernel goes unnoticed: the check did not
#     run again), and --trust-device skips the check; the first use says it is opening and
#     checking the device before it does (a minute of compiling on a cold cache), a known
#     device says neither;
#   - in Vulkan's minimum-limits mode, every case passes or is skipped for its f16.
#   host_verify.sh KILN WORKDIR [BACKEND]
set -u
. "$(dirname "$0")/host_common.sh"
host_setup "$@"
# verdicts of our own: the first-use check must not find the user's (the compiled-program
# caches stay where they are: compiling every kernel again costs a minute on PoCL)
export KILN_DEVICE_CHECK_DIR=$work/cache

# ---- the whole table passes, and every listed case runs ----
"$kiln" verify --backend "$backend" --json runs.json >out.txt 2>err.txt
rc=$?
tail -n 1 out.txt
[ "$rc" -eq 0 ] || { fail "kiln verify --backend $backend: exit $rc"; grep -E '^FAIL' -A1 out.txt | head -20; tail -n 2 err.txt; }
"$kiln" verify --list >list.txt || fail "kiln verify --list"
[ "$(wc -l <list.txt)" -ge 90 ] || fail "kiln verify --list lists $(wc -l <list.txt) cases"
# (on the CPU, the reference, the whole-model checks have nothing to compare with)
while read -r name _; do
  case "$backend:$name" in
    cpu:gpt/*) grep -q "^skip  $name " out.txt || fail "$name: not in kiln verify's output" ;;
    *) grep -q "^pass  $name " out.txt || fail "$name: no passing run in kiln verify's output" ;;
  esac
done <list.txt
"$py" - runs.json out.txt <<'EOF' || fail "--json disagrees with the printed runs"
import json, sys
d = json.load(open(sys.argv[1]))
printed = [l for l in open(sys.argv[2]) if l[:4] in ("pass", "FAIL", "skip")]
assert d["schema"] == "kiln-verify/1", d["schema"]
assert len(d["runs"]) == len(printed) == d["passed"] + d["failed"] + d["skipped"], (len(d["runs"]), len(printed))
assert d["failed"] == 0 and not d["stopped"]
for r in d["runs"]:
    assert r["verdict"] in ("pass", "skip") and r["precision"] in ("f32", "f16"), r
EOF

# ---- bad options: one line, non-zero exit ----
for bad in "--only nosuch" "--backend nosuch" "--json /nonexistent/dir/x.json"; do
  # shellcheck disable=SC2086
  "$kiln" verify $bad >/dev/null 2>err.txt
  rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -ge 128 ] || [ "$(wc -l <err.txt)" -ne 1 ] || ! grep -q '^kiln: error: ' err.txt; then
    fail "kiln verify $bad: exit $rc, stderr: $(cat err.txt)"
  fi
done

if [ "$backend" = cpu ]; then
  grep -q 'vs fd ' out.txt || fail "cpu: the gradients were not checked against finite differences"
  [ "$failures" -eq 0 ] && echo "host_verify ($backend): ok"
  exit $((failures > 0))
fi

# ---- a wrong kernel is caught and named ----
# wrong_kernel KERNEL GROUPS WHAT: with KERNEL's first output element off, verify fails, its
# failing runs are all in GROUPS (a regex of groups whose cases use KERNEL), those of the op
# cases fail on WHAT (forward or gradient: the whole-model checks report their worst
# comparison, wherever the error spread), and the error line names a case of the first group.
wrong_kernel() {
  local kernel=$1 groups=$2 what=$3 first=${2%%|*}
  KILN_FAULT=wrong:$kernel "$kiln" verify --backend "$backend" >out.txt 2>err.txt
  rc=$?
  local failed others
  failed=$(grep -c '^FAIL' out.txt)
  others=$(grep '^FAIL' out.txt | grep -Ev "^FAIL  ($groups)/" | head -3)
  if [ "$rc" -eq 0 ] || [ "$failed" -eq 0 ] || [ -n "$others" ] || [ "$(grep -c '^kiln: error: ' err.txt)" -ne 1 ] ||
     ! tail -n 1 err.txt | grep -q "^kiln: error: verify: .* runs failed; first: $first/"; then
    fail "wrong $kernel: exit $rc, $failed failed runs, outside ${groups}: ${others:-none}; $(tail -n 1 err.txt)"
  elif grep '^FAIL' out.txt | grep -v '^FAIL  gpt/' | grep -Ev "^FAIL  ($groups)/\S+ +\S+( gemm \S+)? +$what" | grep -q .; then
    fail "wrong $kernel: a failing op case compares something else than $what:" \
      "$(grep '^FAIL' out.txt | grep -Ev "^FAIL  ($groups)/\S+ +\S+( gemm \S+)? +$what" | head -2)"
  else
    echo "ok   wrong $kernel: $failed runs fail, all in $groups; $(tail -n 1 err.txt | cut -c1-150)"
  fi
}
wrong_kernel norm_fwd "norm|autograd|gpt" forward
wrong_kernel softmax_bwd "softmax|attention_entropy|autograd|gpt" "gradient [0-9]"
wrong_kernel gemm "matmul|autograd|gpt" "(forward|gradient [0-9])"
# every GEMM variant of the device fails on its own line
KILN_FAULT=wrong:gemm "$kiln" verify --backend "$backend" --only matmul/matmul_ragged_tt >out.txt 2>&1
for variant in $(grep -o 'f32 gemm [a-z0-9]*' out.txt | sort -u | cut -d' ' -f3) ""; do
  grep -q "^FAIL  matmul/matmul_ragged_tt *f32 ${variant:+gemm $variant}" out.txt ||
    fail "wrong gemm: matmul_ragged_tt with gemm ${variant:-default} was not caught"
done
[ "$(grep -c ' gemm ' out.txt)" -ge 2 ] || fail "no GEMM variant of $backend was forced: $(head -3 out.txt)"

# ---- the first-use check in train ----
numbered_lines 60 "line %d: the quick brown fox jumps over the lazy dog" >text.txt
train=(train --data text.txt --backend "$backend" --layers 1 --heads 2 --dim 16 --block 16 --batch 2 --steps 2
       --eval-every 0 --eval-windows 2)
rm -rf cache
KILN_FAULT=wrong:norm_fwd "$kiln" "${train[@]}" --out bad >/dev/null 2>err.txt
rc=$?
# one error line, the last (a driver compiling kernels may print its own warnings before it)
if [ "$rc" -eq 0 ] || [ "$rc" -ge 128 ] || [ "$(grep -c '^kiln: error: ' err.txt)" -ne 1 ] ||
   ! tail -n 1 err.txt | grep -q "^kiln: error: kiln train: $backend device .* computes wrong results: norm/.*--backend cpu.*--trust-device"; then
  fail "train on a device with a wrong kernel: exit $rc, stderr: $(head -c 600 err.txt)"
fi
# no silent minutes: before the check (a minute on a cold cache) it says so, and on a
# terminal (script(1)) also before opening the device
grep -q "^kiln train: checking the $backend device's kernels (first use" err.txt ||
  fail "the first-use check did not say it was checking: $(head -c 600 err.txt)"
if command -v script >/dev/null; then
  script -qec "$(printf '%q ' "$kiln" "${train[@]}") --out tty >/dev/null" /dev/null >tty.txt 2>&1
  [ "$(head -n 1 tty.txt | tr -d '\r')" = "kiln train: opening the $backend device (first use)..." ] ||
    fail "a first use on a terminal did not start with the opening line: $(head -n 1 tty.txt)"
  rm -rf cache
fi
[ -e bad/model.safetensors ] && fail "train on a failing device wrote a checkpoint"
ls cache/verified-* >/dev/null 2>&1 && fail "a failed check was remembered"
KILN_FAULT=wrong:norm_fwd "$kiln" "${train[@]}" --out trusted --trust-device >/dev/null 2>err.txt ||
  fail "--trust-device: $(tail -n 1 err.txt)"
"$kiln" "${train[@]}" --out good >/dev/null 2>err.txt || fail "train on a good device: $(tail -n 1 err.txt)"
ls cache/verified-* >/dev/null 2>&1 || fail "a passed check was not remembered in $KILN_DEVICE_CHECK_DIR"
# the pass is remembered: the check does not run again, so a wrong kernel now goes unseen
KILN_FAULT=wrong:norm_fwd "$kiln" "${train[@]}" --out again >/dev/null 2>err.txt ||
  fail "the remembered pass was not used: $(tail -n 1 err.txt)"
grep -q "first use" err.txt && fail "a device known to pass still said: $(grep 'first use' err.txt)"
KILN_FAULT=wrong:norm_fwd "$kiln" eval --ckpt good/model.safetensors --data text.txt --backend "$backend" \
  >/dev/null 2>err.txt || fail "eval after a remembered pass: $(tail -n 1 err.txt)"
rm -rf cache
KILN_FAULT=wrong:norm_fwd "$kiln" decode --ckpt good/model.safetensors --prompt "line" --max-new 4 \
  --backend "$backend" >/dev/null 2>err.txt && fail "decode on a fresh cache ran on a wrong kernel"
grep -q "^kiln: error: kiln decode: .* computes wrong results: norm/" err.txt || fail "decode: $(cat err.txt)"

# ---- minimum limits (Vulkan) ----
if [ "$backend" = vulkan ]; then
  KILN_VK_MIN_LIMITS=1 "$kiln" verify --backend vulkan >out.txt 2>err.txt || fail "KILN_VK_MIN_LIMITS=1: $(tail -n 1 err.txt)"
  tail -n 1 out.txt
  grep '^skip' out.txt | grep -v ' f16 ' | grep -vq 'cannot store f16' && fail "min limits: an f32 run was skipped"
fi

[ "$failures" -eq 0 ] && echo "host_verify ($backend): ok"
exit $((failures > 0))
