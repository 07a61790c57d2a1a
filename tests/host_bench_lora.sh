#!/usr/bin/env bash
# `kiln bench train --lora` end to end on the cpu backend, briefly (GPT-2 small's widths and
# vocabulary with one block, sequence 32, one step of each run), never a speed:
#   1. every run has its row of figures: full fp32, full fp16, LoRA from the F16 base held
#      in f32 and kept in f16, LoRA from the Q4_0 base;
#   2. the memory is LoRA's: an adapter trains a small fraction of the weights, a LoRA run
#      needs less device memory at its peak than full fine-tuning in the same precision
#      (no gradient or Adam moments of the base), an F16 base holds less than its f32 copy
#      and a Q4_0 base less than the F16 one;
#   3. with Debian's torch, PyTorch's LoRA step of the same shape and the ratio line;
#   4. a shape it does not know is refused in one line.
# usage: host_bench_lora.sh KILN WORKDIR
set -u
kiln=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
quick=(--shapes gpt2-small --layers 1 --block 32 --steps 1 --warmup-steps 0)

torch=--no-torch
/usr/bin/python3 -c "import torch" 2>/dev/null && torch=
# shellcheck disable=SC2086 # $torch is one flag or none
"$kiln" bench train --lora "${quick[@]}" $torch >"$work/out" 2>"$work/err" ||
    { cat "$work/out" "$work/err" >&2; fail "kiln bench train --lora exited $?"; }
cat "$work/out"

# 1. a row per run: label, trained (M), held, step, peak (MiB), ms/step, tokens/s, loss
field() { # LABEL N: the Nth number of the run's row
    grep -F "  $1 " "$work/out" | head -n 1 | sed "s/^  $1 *//" | awk -v n="$2" '{ sub(/M$/, "", $1); print $n }'
}
for run in "full fp32" "full fp16 (f32 masters)" "LoRA, f16 -> f32" "LoRA, f16 base, fp16" "LoRA, q4_0 base"; do
    grep -qF "  $run " "$work/out" || fail "no row for $run"
    grep -F "  $run " "$work/out" | grep -q "n/a" && fail "$run was not measured: $(grep -F "  $run " "$work/out")"
    row=$(grep -F "  $run " "$work/out" | head -n 1 | sed "s/^  $run *//")
    echo "$row" | grep -Eq '^[0-9.]+M( +[0-9.]+){6}$' || fail "the row of $run is not its 7 figures: $row"
done

# 2. memory: compares figures of one run, no timing
less() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
less "$(field "LoRA, f16 -> f32" 1)" "$(awk -v f="$(field "full fp32" 1)" 'BEGIN { print f / 20 }')" ||
    fail "LoRA trains $(field "LoRA, f16 -> f32" 1)M weights of $(field "full fp32" 1)M: not a small fraction"
less "$(field "LoRA, f16 -> f32" 4)" "$(field "full fp32" 4)" ||
    fail "LoRA's peak ($(field "LoRA, f16 -> f32" 4) MiB) is not below full fp32's ($(field "full fp32" 4) MiB)"
less "$(field "LoRA, f16 base, fp16" 4)" "$(field "full fp16 (f32 masters)" 4)" ||
    fail "LoRA fp16's peak is not below full fp16's"
less "$(field "LoRA, f16 base, fp16" 2)" "$(field "LoRA, f16 -> f32" 2)" ||
    fail "the F16 base ($(field "LoRA, f16 base, fp16" 2) MiB held) is not below its f32 copy ($(field "LoRA, f16 -> f32" 2) MiB)"
less "$(field "LoRA, q4_0 base" 2)" "$(field "LoRA, f16 base, fp16" 2)" ||
    fail "the Q4_0 base ($(field "LoRA, q4_0 base" 2) MiB held) is not below the F16 one"

# 3. PyTorch's row and the ratio
if [ -z "$torch" ]; then
    grep -q '^  PyTorch LoRA, f32 base  *[0-9.]* *[0-9.]*$' "$work/out" || fail "no PyTorch row"
    grep -q '^  kiln / PyTorch, LoRA step on the cpu (f32 base both): [0-9.]* x' "$work/out" || fail "no ratio line"
else
    echo "PyTorch: skipped (no torch in /usr/bin/python3)"
fi

# 4. an unknown shape: one line
"$kiln" bench train --lora --shapes gpt3 >"$work/bad.out" 2>"$work/bad.err" && fail "an unknown shape was accepted"
[ "$(wc -l <"$work/bad.err")" -eq 1 ] && grep -q 'unknown shape "gpt3"' "$work/bad.err" ||
    { cat "$work/bad.err" >&2; fail "an unknown shape is not refused in one line"; }
echo "ok"
