#!/usr/bin/env bash
# Every quantized type and mix of `kiln quantize` end to end (model/gpt/gpt_quant_mix.h,
# docs/quantization.md), and the GGUF files kiln refuses in one line:
#   - a GPT of width 256 (K super-blocks whole) trained briefly, quantized to each pure type
#     (q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k) and mix (q4_k_m q4_k_s q5_k_m q5_k_s): the
#     file equals `kiln export --type` of the same type byte for byte, and evaluates within
#     0.02 of the checkpoint's loss for 6 and 8 bits, 0.1 for 4 and 5 (each figure printed);
#   - `kiln bench decode --formats` runs a mix and a pure K type (rows present);
#   - refused in one line naming the tensor and the file: a Q2_K tensor, an IQ4_XS tensor,
#     a ggml type number ggml does not have, a Q4_K tensor whose rows are 192 values, a Q6_K
#     tensor cut short by the end of the file; and --format q2_k, --format f16.
# Llama.cpp's own choice of types and bytes is tests/llama/check_quant_mix.py's.
#   host_quant_types.sh KILN WORKDIR [BACKEND]
set -u
. "$(dirname "$0")/host_common.sh"
host_setup "$@"

numbered_lines 400 "line %d: when shall we three meet again, in thunder, lightning, or in rain" >text.txt
tail -n 40 text.txt >held.txt
common=(--backend "$backend" --trust-device)
"$kiln" train --data text.txt --out run --layers 1 --heads 4 --dim 256 --block 32 --batch 4 --steps 30 --lr 3e-3 \
  --eval-every 0 --eval-windows 4 --backend cpu >/dev/null 2>train.err || { cat train.err; exit 1; }

loss_of() { "$kiln" eval --ckpt "$1" --data held.txt "${common[@]}" 2>/dev/null | sed -n 's/^loss //p'; }
base=$(loss_of run/model.safetensors)
[ -n "$base" ] || { echo "FAIL the checkpoint does not evaluate"; exit 1; }
for t in q8_0:0.02 q6_k:0.02 q5_0:0.1 q5_1:0.1 q4_0:0.1 q4_1:0.1 q4_k:0.1 q5_k:0.1 q4_k_m:0.1 q4_k_s:0.1 \
  q5_k_m:0.1 q5_k_s:0.1; do
  name=${t%%:*} tol=${t#*:}
  "$kiln" quantize --ckpt run/model.safetensors --format "$name" --out "run/$name.gguf" 2>err.txt ||
    { fail "quantize --format $name: $(cat err.txt)"; continue; }
  "$kiln" export --ckpt run/model.safetensors --format gguf --type "$name" --out "run/$name.export.gguf" 2>err.txt ||
    fail "export --type $name: $(cat err.txt)"
  cmp -s "run/$name.gguf" "run/$name.export.gguf" || fail "kiln quantize --format $name differs from kiln export --type $name"
  got=$(loss_of "run/$name.gguf")
  if [ -n "$got" ] && "$py" -c "import sys; sys.exit(0 if abs($got - $base) <= $tol else 1)"; then
    echo "ok   $name: loss $got, the checkpoint's $base ($(stat -c %s "run/$name.gguf") bytes)"
  else
    fail "$name: loss '${got:-none}' where the checkpoint has $base (tolerance $tol)"
  fi
done

"$kiln" bench decode --backend "$backend" --quick --ckpt run/model.safetensors --formats q4_k_m,q6_k \
  >bench.out 2>bench.err || fail "bench decode --formats q4_k_m,q6_k: $(tail -1 bench.err)"
for f in q4_k_m q6_k; do
  grep -q "^  ckpt $f  *decode " bench.out && echo "ok   bench decode runs $f" || fail "no decode row of $f: $(cat bench.out)"
done

# ---- refusals: one line each, naming the tensor and the file ----
# bad.gguf: one tensor "blk.0.w" of ggml type TYPE, ne [COLS, 2], NBYTES bytes of data
bad_file() { # PATH TYPE COLS NBYTES
  "$py" -c "
import struct, sys
path, typ, cols, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def s(x): b = x.encode(); return struct.pack('<Q', len(b)) + b
kv = s('general.architecture') + struct.pack('<I', 8) + s('llama')
info = s('blk.0.w') + struct.pack('<I', 2) + struct.pack('<QQ', cols, 2) + struct.pack('<IQ', typ, 0)
head = b'GGUF' + struct.pack('<IQQ', 3, 1, 1) + kv + info
open(path, 'wb').write(head + b'\0' * (-len(head) % 32) + b'\x11' * n)" "$@"
}
bad_file q2k.gguf 10 256 168
expect_one_line_error "a Q2_K tensor" "q2k.gguf: the tensor blk.0.w is q2_K, which kiln does not read" \
  decode --ckpt q2k.gguf --prompt x "${common[@]}"
bad_file iq.gguf 23 256 272
expect_one_line_error "an IQ4_XS tensor" "iq.gguf: the tensor blk.0.w is iq4_xs" decode --ckpt iq.gguf --prompt x \
  "${common[@]}"
bad_file t99.gguf 99 256 512
expect_one_line_error "an unknown ggml type" "t99.gguf: the tensor blk.0.w is type 99" decode --ckpt t99.gguf \
  --prompt x "${common[@]}"
bad_file rows.gguf 12 192 288
expect_one_line_error "Q4_K rows of 192" "rows.gguf: a row of the tensor blk.0.w (q4_K, 192 values) is not a whole number of its type's blocks of 256" \
  decode --ckpt rows.gguf --prompt x "${common[@]}"
bad_file cut.gguf 14 256 419
expect_one_line_error "a truncated Q6_K block" "cut.gguf: the tensor blk.0.w lies beyond the end of the file" \
  decode --ckpt cut.gguf --prompt x "${common[@]}"
expect_one_line_error "quantize --format q2_k" "--format q2_k is not one of q8_0, q4_0, q4_1, q5_0" \
  quantize --ckpt run/model.safetensors --format q2_k --out x.gguf
expect_one_line_error "quantize --format f16" "--format f16 is not one of q8_0" \
  quantize --ckpt run/model.safetensors --format f16 --out x.gguf

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all quantized-type checks passed"
