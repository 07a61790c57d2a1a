#!/usr/bin/env bash
# GGUF and quantized inference end to end (model/gpt/gpt_gguf.h, docs/quantization.md):
#   - a trained GPT exported as GGUF at f32, f16, q8_0, q4_0 and q4_1 (kiln export, kiln quantize)
#     reads back: the f32 file evaluates to the checkpoint's loss exactly, f16 within 1e-3,
#     q8_0 within 0.01, q4_0 and q4_1 within 0.1 (each figure printed), and greedy decoding from the
#     f32 and q8_0 files gives the checkpoint's bytes;
#   - the files are the expected sizes (q4_0 about a quarter of f16 for the matrices);
#   - refused in one line: a model llama.cpp's gpt2 cannot hold (Post-LN), a width that is not
#     whole blocks for q8_0, an unknown --type, a truncated GGUF, a GGUF of another architecture.
# The model is trained on the cpu backend and the files are written on the host; BACKEND runs
# the evaluations and the decoding (the quantized product on the device).
#   host_gguf.sh KILN WORKDIR [BACKEND]
set -u
. "$(dirname "$0")/host_common.sh"
host_setup "$@"

numbered_lines 600 "line %d: when shall we three meet again, in thunder, lightning, or in rain" >text.txt
tail -n 40 text.txt >held.txt
common=(--backend "$backend" --trust-device)
"$kiln" train --data text.txt --out run --layers 2 --heads 2 --dim 32 --block 32 --batch 8 --steps 60 --lr 3e-3 \
  --eval-every 0 --eval-windows 8 --backend cpu >/dev/null 2>train.err || { cat train.err; exit 1; }
for t in f32 f16 q8_0 q4_0 q4_1; do
  "$kiln" export --ckpt run/model.safetensors --format gguf --type "$t" --out "run/$t.gguf" 2>export.err ||
    fail "export --type $t: $(cat export.err)"
done
"$kiln" quantize --ckpt run/model.safetensors --format q4_0 --out run/quantized.gguf 2>/dev/null || fail "kiln quantize"
cmp -s run/quantized.gguf run/q4_0.gguf || fail "kiln quantize --format q4_0 differs from kiln export --type q4_0"
"$kiln" quantize --ckpt run/model.safetensors --format q4_1 --out run/quantized.gguf 2>/dev/null || fail "kiln quantize q4_1"
cmp -s run/quantized.gguf run/q4_1.gguf || fail "kiln quantize --format q4_1 differs from kiln export --type q4_1"

loss_of() { "$kiln" eval --ckpt "$1" --data held.txt "${common[@]}" 2>/dev/null | sed -n 's/^loss //p'; }
base=$(loss_of run/model.safetensors)
[ -n "$base" ] || { echo "FAIL the checkpoint does not evaluate"; exit 1; }
for t in f32:0 f16:1e-3 q8_0:0.01 q4_0:0.1 q4_1:0.1; do
  name=${t%%:*} tol=${t#*:}
  got=$(loss_of "run/$name.gguf")
  if [ -n "$got" ] && "$py" -c "import sys; sys.exit(0 if abs($got - $base) <= $tol else 1)"; then
    echo "ok   $name: loss $got, the checkpoint's $base (difference $("$py" -c "print(f'{$got - $base:+.6f}')"))"
  else
    fail "$name: loss '${got:-none}' where the checkpoint has $base (tolerance $tol)"
  fi
done

decode() { "$kiln" decode --ckpt "$1" --prompt "line 7" --max-new 24 --greedy "${common[@]}" 2>/dev/null; }
want=$(decode run/model.safetensors)
for t in f32 q8_0; do
  if [ "$(decode "run/$t.gguf")" = "$want" ]; then echo "ok   $t: greedy decoding gives the checkpoint's 24 bytes"
  else fail "$t: greedy decoding differs: '$(decode "run/$t.gguf")' vs '$want'"; fi
done

# sizes: the matrices dominate, so q4_0 is near a quarter of f16 and q8_0 near a half
size() { stat -c %s "$1"; }
"$py" -c "
f16, q8, q4 = $(size run/f16.gguf), $(size run/q8_0.gguf), $(size run/q4_0.gguf)
print(f'ok   sizes: f16 {f16}, q8_0 {q8} ({q8 / f16:.2f} of f16), q4_0 {q4} ({q4 / f16:.2f})')
assert q4 < 0.5 * f16 and q8 < 0.75 * f16, 'quantized files are not smaller'
" || fail "file sizes"

# ---- refusals: one line each ----
expect_refused() { # WHAT PATTERN COMMAND...
  local what=$1 pattern=$2
  shift 2
  "$@" >/dev/null 2>err.txt
  local rc=$? lines
  lines=$(grep -c '^kiln: error: ' err.txt)
  if [ $rc -ne 0 ] && [ "$lines" -eq 1 ] && grep -q "$pattern" err.txt; then echo "ok   $what: $(cat err.txt)"
  else fail "$what: exit $rc, $(cat err.txt)"; fi
}
"$kiln" train --data text.txt --out post --layers 1 --heads 2 --dim 32 --block 16 --batch 4 --steps 2 --norm post \
  --eval-every 0 --eval-windows 2 --backend cpu >/dev/null 2>&1
expect_refused "a Post-LN model" "trained with norm" "$kiln" export --ckpt post/model.safetensors --format gguf \
  --out post.gguf
"$kiln" train --data text.txt --out narrow --layers 1 --heads 2 --dim 24 --block 16 --batch 4 --steps 2 \
  --eval-every 0 --eval-windows 2 --backend cpu >/dev/null 2>&1
expect_refused "width 24 as q8_0" "multiple of 32" "$kiln" quantize --ckpt narrow/model.safetensors --format q8_0 \
  --out narrow.gguf
expect_refused "an unknown type" "is not one of f32, f16, q8_0, q4_0" "$kiln" export --ckpt run/model.safetensors \
  --format gguf --type q2_k --out x.gguf
head -c 2000 run/q8_0.gguf >cut.gguf
expect_refused "a truncated GGUF" "cut.gguf" "$kiln" eval --ckpt cut.gguf --data held.txt "${common[@]}"
"$py" -c '
import struct
def s(x): b = x.encode(); return struct.pack("<Q", len(b)) + b
kv = s("general.architecture") + struct.pack("<I", 8) + s("mamba")
open("mamba.gguf", "wb").write(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + kv)'
expect_refused "another architecture" 'architecture "mamba"' "$kiln" decode --ckpt mamba.gguf --prompt x \
  "${common[@]}"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all GGUF checks passed"
