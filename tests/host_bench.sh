#!/usr/bin/env bash
# `kiln bench` end to end on the cpu backend, never a speed:
#   1. a --quick run writes a result file naming the build, the device and every kind of
#      figure (ceilings, GEMMs, memory-bound kernels, the tiny model);
#   2. `kiln bench compare` prints two runs side by side;
#   3. compare refuses a malformed file, a foreign one (valid JSON, another schema, or a
#      kiln-bench file with a mistyped field) and a missing one, each with exactly one line
#      on stderr, nothing on stdout, and a non-zero exit code;
#   4. an unwritable --json path is refused before anything is measured;
#   5. `kiln bench decode`: every format's rows, the quantized formats related to f16 (their
#      bytes per token in the formats' ratios), a bad --formats refused;
#   6. `kiln bench decode --ckpt` of a Llama-family checkpoint (every format), and of a Q8_0
#      GGUF file, which runs in its own format only (the others n/a, not errors).
# usage: host_bench.sh KILN WORKDIR
set -u
kiln=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# 1. a quick run with every section
"$kiln" bench --backend cpu --quick --json "$work/a.json" >"$work/a.out" 2>"$work/a.err" ||
    { cat "$work/a.out" "$work/a.err" >&2; fail "kiln bench --quick exited $?"; }
[ -s "$work/a.json" ] || fail "no result file"
for key in '"schema": "kiln-bench/1"' '"git_commit": "' '"kiln_version": "' '"id": "cpu:0"' '"driver": "' \
    '"key": "fma.f32"' '"key": "fma.f16"' '"key": "fma.f32.w16"' '"key": "copy"' '"key": "h2d"' '"key": "d2h"' \
    '"key": "dispatch"' '"key": "sgemm.openblas"' \
    '"key": "gemm.f32.nn"' '"key": "gemm.f32.nt"' '"key": "gemm.f32.tn"' \
    '"key": "gemm.f16.nn"' '"key": "gemm.f16.nt"' '"key": "gemm.f16.tn"' \
    '"key": "softmax.causal"' '"key": "layernorm.fwd"' '"key": "layernorm.bwd"' '"key": "xent.fwd"' \
    '"key": "xent.bwd"' '"key": "adamw"' \
    '"key": "tiny.fp32.train.step"' '"key": "tiny.fp32.train.tokens"' '"key": "tiny.fp32.train.flops"' \
    '"key": "tiny.fp32.prefill.tokens"' '"key": "tiny.fp32.prefill.flops"' '"key": "tiny.fp32.decode.latency"' \
    '"key": "tiny.fp32.decode.weights"' '"key": "tiny.fp16.train.flops"' '"key": "tiny.fp16.decode.latency"' \
    '"key": "tiny.f32.decode.tokens"' '"key": "tiny.f16.decode.weights"' '"key": "tiny.q8_0.prefill.tokens"' \
    '"key": "tiny.q4_0.memory"' '"section": "decode"'; do
    grep -qF "$key" "$work/a.json" || fail "the result file has no $key"
done
# a figure in the table is what the file holds: the f32 GEMM against its ceiling
grep -q '^  GEMM f32 NN .*% fma.f32' "$work/a.out" || { cat "$work/a.out" >&2; fail "no GEMM row with its percentage"; }
grep -q '"pct": [0-9]' "$work/a.json" || fail "no percentage of a ceiling in the result file"

# 2. compare with a second (partial, so faster) run
"$kiln" bench --backend cpu --quick --only kernels --json "$work/b.json" >"$work/b.out" 2>&1 ||
    { cat "$work/b.out" >&2; fail "the second run failed"; }
"$kiln" bench compare "$work/a.json" "$work/b.json" >"$work/cmp.out" 2>"$work/cmp.err" ||
    { cat "$work/cmp.err" >&2; fail "compare of two result files failed"; }
grep -q "^  \[1\] $work/a.json  cpu:0" "$work/cmp.out" || fail "compare does not name the first file's device"
grep -q "^  \[2\] $work/b.json  cpu:0" "$work/cmp.out" || fail "compare does not name the second file's device"
# a kernel both measured: two numbers (a percentage only where the run measured the
# ceiling); a ceiling only the first measured: a number and "-"
grep -Eq '^  GEMM f32 NN +GFLOP/s +[0-9.]+ \([0-9]+%\) +[0-9.]+ *$' "$work/cmp.out" ||
    { cat "$work/cmp.out" >&2; fail "compare does not show the GEMM of both runs"; }
grep -Eq '^  FMA f32, best \(width [0-9]+\) +GFLOP/s +[0-9.]+ +- *$' "$work/cmp.out" ||
    { cat "$work/cmp.out" >&2; fail "compare does not show the f32 ceiling of the first run beside a dash"; }

# 3. bad files: one line on stderr naming the file, nothing on stdout, exit code 1
refuse() { # NAME EXPECTED-TEXT FILE...
    local name=$1 expect=$2
    shift 2
    "$kiln" bench compare "$@" >"$work/$name.out" 2>"$work/$name.err"
    local rc=$?
    [ $rc -ne 0 ] || fail "compare accepted the $name file"
    [ ! -s "$work/$name.out" ] || fail "compare printed a table for the $name file"
    [ "$(wc -l <"$work/$name.err")" -eq 1 ] || { cat "$work/$name.err" >&2; fail "not one line of error for the $name file"; }
    grep -q "^kiln: error: bench compare: .*$expect" "$work/$name.err" ||
        { cat "$work/$name.err" >&2; fail "the $name file's error does not say '$expect'"; }
}
printf '{"schema": "kiln-bench/1", "devices": [{"id": "cpu:0",' >"$work/truncated.json"
refuse malformed "truncated.json is not valid JSON: line 1" "$work/a.json" "$work/truncated.json"
printf '{"name": "clpeak", "results": [1, 2, 3]}\n' >"$work/other.json"
refuse foreign 'other.json is not a kiln bench result: it has no "schema": "kiln-bench/1"' "$work/other.json"
printf '[1, 2]\n' >"$work/array.json"
refuse array 'array.json is not a kiln bench result: the top level is a JSON array, not an object' "$work/array.json"
printf '{"schema": "kiln-bench/1", "devices": [{"id": "cpu:0", "name": "x", "figures": [{"key": "copy", "label": "copy", "unit": "GB/s", "median": "fast"}]}]}\n' >"$work/mistyped.json"
refuse mistyped 'devices\[0\].figures\[0\].median should be a number' "$work/mistyped.json"
printf '{"schema": "kiln-bench/9", "devices": []}\n' >"$work/newer.json"
refuse newer 'has schema "kiln-bench/9"; this kiln reads "kiln-bench/1"' "$work/newer.json"
refuse missing "cannot read $work/nonexistent.json: No such file or directory" "$work/a.json" "$work/nonexistent.json"
refuse none "give the result files to compare"

# 4. a result file that cannot be written is refused before any measuring
"$kiln" bench --backend cpu --json "$work/no/such/dir/r.json" >"$work/nodir.out" 2>"$work/nodir.err" &&
    fail "kiln bench accepted an unwritable --json path"
[ ! -s "$work/nodir.out" ] || fail "kiln bench measured before refusing an unwritable --json path"
grep -q "^kiln: error: --json: cannot write" "$work/nodir.err" || { cat "$work/nodir.err" >&2; fail "no error for an unwritable --json path"; }
# 5. the decode section alone
"$kiln" bench decode --backend cpu --quick --formats f16,q8_0,q4_0 >"$work/d.out" 2>"$work/d.err" ||
    { cat "$work/d.out" "$work/d.err" >&2; fail "kiln bench decode exited $?"; }
grep -q '^  copy bandwidth' "$work/d.out" || fail "bench decode did not measure the copy bandwidth it relates to"
grep -Eq '^  tiny q4_0 weights read +0\.[0-9]+ MB/token +[0-9.]+ GB/s +[0-9.]+% copy' "$work/d.out" ||
    { cat "$work/d.out" >&2; fail "no Q4_0 bytes-per-token row against the copy bandwidth"; }
! grep -q '^  tiny f32 ' "$work/d.out" || fail "bench decode ran f32, which --formats left out"
# Q4_0 stores 18 bytes per 32 weights where f16 stores 64: the tiny model's matrices (its
# tables and LayerNorms stay as they were) read between 0.28 and 0.35 of f16's bytes
ratio=$(sed -n 's/^  tiny: q4_0 reads \([0-9.]*\)x the bytes of f16 per token and decodes [0-9.]*x as fast$/\1/p' "$work/d.out")
[ -n "$ratio" ] || { cat "$work/d.out" >&2; fail "no line relating q4_0 to f16"; }
awk -v r="$ratio" 'BEGIN { exit !(r > 0.28 && r < 0.35) }' || fail "q4_0 reads ${ratio}x f16's bytes per token"
"$kiln" bench decode --backend cpu --formats q2_k >"$work/bf.out" 2>"$work/bf.err" && fail "bench decode accepted --formats q2_k"
grep -q "^kiln: error: --formats: unknown item 'q2_k'" "$work/bf.err" || { cat "$work/bf.err" >&2; fail "no error for --formats q2_k"; }
# 6. --ckpt: a Llama-family model (RMSNorm, rope, SwiGLU, GQA 4/2) from one training step,
# and a GPT's Q8_0 GGUF export
for i in $(seq 1 300); do echo "line $i: to be, or not to be, that is the question"; done >"$work/text.txt"
train() { # OUT ARGS...
    local out=$1
    shift
    "$kiln" train --data "$work/text.txt" --out "$work/$out" --steps 1 --warmup 0 --eval-every 0 --eval-windows 1 \
        --batch 1 --backend cpu --layers 2 --heads 4 --dim 64 --block 32 "$@" >"$work/$out.log" 2>&1 ||
        { cat "$work/$out.log" >&2; fail "kiln train $out exited $?"; }
}
train llama --model llama --kv-heads 2
"$kiln" bench decode --backend cpu --quick --ckpt "$work/llama/model.safetensors" >"$work/l.out" 2>"$work/l.err" ||
    { cat "$work/l.out" "$work/l.err" >&2; fail "kiln bench decode --ckpt of a Llama-family model exited $?"; }
for fmt in f32 f16 q8_0 q4_0; do
    grep -Eq "^  ckpt $fmt decode +8 after 16 +[0-9.]+ tokens/s" "$work/l.out" ||
        { cat "$work/l.out" >&2; fail "no $fmt decode row of the Llama-family checkpoint"; }
done
train gpt
"$kiln" export --ckpt "$work/gpt/model.safetensors" --format gguf --type q8_0 --out "$work/gpt.q8_0.gguf" \
    >"$work/export.out" 2>&1 || { cat "$work/export.out" >&2; fail "kiln export --type q8_0 exited $?"; }
"$kiln" bench decode --backend cpu --quick --ckpt "$work/gpt.q8_0.gguf" >"$work/q.out" 2>"$work/q.err" ||
    { cat "$work/q.out" "$work/q.err" >&2; fail "kiln bench decode --ckpt of a Q8_0 GGUF file exited $?"; }
grep -Eq '^  ckpt q8_0 decode +8 after 16 +[0-9.]+ tokens/s' "$work/q.out" ||
    { cat "$work/q.out" >&2; fail "the Q8_0 file did not decode in its own format"; }
grep -Eq '^  ckpt f16 decode .*n/a: the file is quantized \(q8_0\): run in its own format only' "$work/q.out" ||
    { cat "$work/q.out" >&2; fail "the Q8_0 file's f16 row does not say why it was not run"; }
echo "ok"
