#!/usr/bin/env bash
# samples/lora/run.sh --quick end to end (its base, its adapter, llama.cpp):
#   1. it runs to the end, on the man pages and licence texts of this machine (77 where it
#      has too few);
#   2. the adapter lowers the loss of the held-out NAME lines below the base's;
#   3. the adapter folder holds PEFT's two files, and the base checkpoint is the one the
#      base run wrote (training the adapter never rewrote it);
#   4. with node-llama-cpp (KILN_NODE_PEERS), llama.cpp loaded the adapter's GGUF on the
#      base's and continued every prompt; the continuations must agree with kiln's on the
#      first bytes of most prompts (a quick model's near ties may flip one later byte).
# usage: sample_lora.sh KILN WORKDIR
set -u
kiln=$1
work=$2
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$work"
mkdir -p "$work"
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

KILN=$kiln "$root/samples/lora/run.sh" --quick --out "$work/run" >"$work/out" 2>"$work/err"
rc=$?
cat "$work/out"
if [ $rc = 3 ]; then
    echo "skipped: $(cat "$work/err")"
    exit 77
fi
[ $rc = 0 ] || { cat "$work/err" >&2; fail "samples/lora/run.sh exited $rc"; }

# 2. the held-out loss: before (the base), then after (with the adapter)
mapfile -t losses < <(sed -n 's/^loss //p' "$work/out")
[ "${#losses[@]}" = 2 ] || fail "expected two losses (before, after), got ${#losses[@]}"
awk -v a="${losses[1]}" -v b="${losses[0]}" 'BEGIN { exit !(a < b - 0.05) }' ||
    fail "the adapter does not lower the held-out loss: ${losses[0]} before, ${losses[1]} after"
echo "ok   held-out loss ${losses[0]} -> ${losses[1]}"

# 3. the files
for f in adapter_config.json adapter_model.safetensors; do
    [ -s "$work/run/adapter/$f" ] || fail "no $f in the adapter folder"
done
grep -q '"peft_type": *"LORA"' "$work/run/adapter/adapter_config.json" || fail "adapter_config.json is not PEFT's LoRA"
[ "$(find "$work/run/base" -name model.safetensors -newer "$work/run/adapter/adapter_config.json")" = "" ] ||
    fail "the base checkpoint was written after the adapter"

# 4. llama.cpp
if grep -q '^skipped: ' "$work/out"; then
    echo "llama.cpp: $(grep '^skipped: ' "$work/out")"
    exit 0
fi
[ -s "$work/run/llama_cpp_after.txt" ] || fail "no llama.cpp continuations"
agree=$(paste -d '\t' "$work/run/kiln_after.txt" "$work/run/llama_cpp_after.txt" |
    awk -F'\t' '{ n++; if (substr($1, 1, 24) == substr($2, 1, 24)) k++ } END { print k + 0 "/" n }')
echo "ok   llama.cpp with the adapter: $agree prompts agree with kiln on their first bytes"
awk -v f="$agree" 'BEGIN { split(f, p, "/"); exit !(p[2] >= 5 && p[1] >= p[2] - 1) }' ||
    fail "llama.cpp with the adapter differs from kiln on more than one prompt ($agree agree)"
