#!/usr/bin/env bash
# Using LoRA adapters (issue 32): `kiln decode|eval --ckpt BASE --lora PATH[:SCALE]` and
# `kiln export --lora ADAPTER [--merge-lora]`, on a small GPT-2 base (its kiln checkpoint and
# GGUF at f32 and q8_0) and a Llama-family one, with adapters `kiln train --lora-rank` trained:
#   - the adapter read as PEFT's folder, its adapter_model.safetensors and the LoRA GGUF
#     that `kiln export --lora` writes gives the same loss; it lowers the loss on its text;
#     SCALE 0 is the base's loss; two adapters at once differ from either alone;
#   - the merge (`--merge-lora`) as GGUF f32, a kiln checkpoint and a Hugging Face folder gives
#     the adapter run's loss (1e-4); from the q8_0 base at --type q8_0 within 0.01;
#   - an adapter trained on another file of the same model (f32 against q8_0) gets one warning
#     line and runs;
#   - bad input (cpu): --lora with a file that is not an adapter, an adapter for another base
#     (architecture, shapes, tokenizer; in both forms), a SCALE that is not a number, the
#     export's wrong combinations: one line, exit 1, and no output file.
# On a GPU backend only the first two run (the adapters on the device against the cpu).
#   host_lora_use.sh KILN WORKDIR [BACKEND]
set -u
. "$(dirname "$0")/host_common.sh"
host_setup "$@"

run() { "$kiln" "$@" 2>>log.txt || { echo "FAIL kiln $*: $(tail -1 log.txt)"; exit 1; }; }
loss() { run eval --data "$1" --backend "$backend" --trust-device "${@:2}" | awk '{print $2}'; }
same() { # same WHAT A B TOLERANCE
  if awk -v a="$2" -v b="$3" -v t="$4" 'BEGIN { d = a - b; exit !(d <= t && -d <= t) }'; then
    echo "ok   $1: $2 and $3"
  else
    fail "$1: $2 and $3 differ by more than $4"
  fi
}

numbered_lines 300 "row %d: sing a song of sixpence, a pocket full of rye" >text.txt
numbered_lines 200 "verse %d: four and twenty blackbirds baked in a pie" >tune.txt
shape=(--layers 2 --heads 2 --dim 32 --block 32 --batch 8 --warmup 5 --lr 3e-3 --eval-every 0 --backend cpu)
run train --data text.txt --out base --steps 100 "${shape[@]}" >/dev/null
run export --ckpt base/model.safetensors --format gguf --type f32 --out f32.gguf
run export --ckpt base/model.safetensors --format gguf --type q8_0 --out q8_0.gguf
lora=(--data tune.txt --batch 4 --lr 1e-2 --warmup 2 --steps 40 --eval-every 0 --backend cpu)
run train --init f32.gguf --lora-rank 4 --out ad "${lora[@]}" >/dev/null
run train --init f32.gguf --lora-rank 2 --lora-targets c_fc --out ad2 "${lora[@]}" >/dev/null
run export --ckpt f32.gguf --lora ad --format gguf --out ad.gguf

base=$(loss tune.txt --ckpt f32.gguf)
with=$(loss tune.txt --ckpt f32.gguf --lora ad)
same "the folder and its safetensors" "$with" "$(loss tune.txt --ckpt f32.gguf --lora ad/adapter_model.safetensors)" 0
same "PEFT's files and the LoRA GGUF" "$with" "$(loss tune.txt --ckpt f32.gguf --lora ad.gguf)" 1e-5
same "SCALE 0: the base" "$base" "$(loss tune.txt --ckpt f32.gguf --lora ad:0)" 1e-6
awk -v a="$with" -v b="$base" 'BEGIN { exit !(a < b - 0.1) }' && echo "ok   the adapter lowers the loss: $base -> $with" ||
  fail "the adapter does not lower the loss on its text: $base -> $with"
both=$(loss tune.txt --ckpt f32.gguf --lora ad --lora ad2)
[ "$both" != "$with" ] && echo "ok   two adapters at once: $both" || fail "the second adapter changed nothing"
ids=$(run decode --ckpt f32.gguf --lora ad --prompt "verse 7" --max-new 16 --greedy --print-ids --backend "$backend" --trust-device)
[ "$ids" = "$(run decode --ckpt f32.gguf --lora ad.gguf --prompt "verse 7" --max-new 16 --greedy --print-ids)" ] &&
  echo "ok   decode --lora on $backend: $ids" || fail "decode --lora on $backend differs from the cpu with the GGUF"
[ "$backend" = cpu ] || { [ "$failures" -eq 0 ]; exit; }

# merges: every format export writes, and a quantized base
for f in "gguf --type f32 --out m.gguf" "kiln --out m.safetensors" "hf --out m-hf"; do
  # shellcheck disable=SC2086
  run export --ckpt f32.gguf --lora ad --merge-lora --format $f
done
same "merged GGUF f32" "$with" "$(loss tune.txt --ckpt m.gguf)" 1e-4
same "merged kiln checkpoint" "$with" "$(loss tune.txt --ckpt m.safetensors)" 1e-4
same "merged Hugging Face folder" "$with" "$(loss tune.txt --ckpt m-hf)" 1e-4
run export --ckpt q8_0.gguf --lora ad --merge-lora --format gguf --out mq.gguf 2>/dev/null
run export --ckpt q8_0.gguf --lora ad --merge-lora --format gguf --type q8_0 --out mq8.gguf 2>/dev/null
q8=$(loss tune.txt --ckpt q8_0.gguf --lora ad 2>/dev/null)
same "the q8_0 base merged at f16 (the default)" "$q8" "$(loss tune.txt --ckpt mq.gguf)" 0.01
same "the q8_0 base merged at q8_0" "$q8" "$(loss tune.txt --ckpt mq8.gguf)" 0.01

# another file of the same model: one warning line, and it runs
if "$kiln" eval --ckpt q8_0.gguf --lora ad --data tune.txt >/dev/null 2>warn.txt &&
  [ "$(grep -c '^kiln: warning: .*trained on another file of this model' warn.txt)" = 1 ]; then
  echo "ok   another file of the base: $(grep warning warn.txt)"
else
  fail "another file of the base: $(cat warn.txt)"
fi

# bad input
run train --model llama --data text.txt --out llama --steps 5 "${shape[@]}" >/dev/null
run train --data text.txt --out wide --steps 5 "${shape[@]/32/48}" >/dev/null
run train --init llama/model.safetensors --lora-rank 2 --out ad_llama "${lora[@]/40/5}" >/dev/null
"$py" - ad ad_tok <<'EOF'
import json, os, shutil, struct, sys
# the adapter with another tokenizer recorded for its base (the header rewritten, the same length)
src, dst = sys.argv[1], sys.argv[2]
shutil.copytree(src, dst)
path = os.path.join(dst, "adapter_model.safetensors")
data = open(path, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
tok = header["__metadata__"]["kiln.base.tokenizer"]
header["__metadata__"]["kiln.base.tokenizer"] = ("f" if tok[0] != "f" else "e") + tok[1:]
text = json.dumps(header, separators=(",", ":")).encode().ljust(n)
open(path, "wb").write(struct.pack("<Q", n) + text + data[8 + n:])
EOF
echo "not an adapter" >notes.txt
check() { # check WHAT WANT ARGS...: one line, and no file bad.*
  expect_one_line_error "$@"
  [ -z "$(ls -d bad.* 2>/dev/null)" ] || fail "$1: left $(ls -d bad.*)"
}
d=(decode --prompt row --max-new 2)
check "a model checkpoint as --lora" "none of its tensors is PEFT's lora_A or lora_B" "${d[@]}" --ckpt f32.gguf --lora base/model.safetensors
check "a model GGUF as --lora" "is not a LoRA adapter" "${d[@]}" --ckpt f32.gguf --lora q8_0.gguf
check "a text file as --lora" "notes.txt: not a LoRA adapter" "${d[@]}" --ckpt f32.gguf --lora notes.txt
check "a missing --lora" "missing" "${d[@]}" --ckpt f32.gguf --lora missing
check "GPT-2's adapter on a llama base" "another base: its architecture is gpt2" eval --data tune.txt --ckpt llama/model.safetensors --lora ad
check "GPT-2's LoRA GGUF on a llama base" "an adapter for llama.cpp's gpt2, but the base is llama" eval --data tune.txt --ckpt llama/model.safetensors --lora ad.gguf
check "a llama adapter on GPT-2" "another base: its architecture is llama" "${d[@]}" --ckpt f32.gguf --lora ad_llama
check "an adapter for other shapes" "another base: its shapes" "${d[@]}" --ckpt wide/model.safetensors --lora ad
check "a LoRA GGUF for other shapes" "has incorrect shape" "${d[@]}" --ckpt wide/model.safetensors --lora ad.gguf
check "an adapter for another tokenizer" "another base: its tokenizer is" "${d[@]}" --ckpt f32.gguf --lora ad_tok
check "a SCALE that is not a number" "SCALE \"abc\" is not a number" "${d[@]}" --ckpt f32.gguf --lora ad:abc
check "eval: a SCALE that is not a number" "SCALE \"1x\" is not a number" eval --data tune.txt --ckpt f32.gguf --lora ad:1x
check "export of an adapter for another base" "another base" export --ckpt llama/model.safetensors --lora ad --format gguf --out bad.gguf
check "merge of an adapter for another base" "another base" export --ckpt wide/model.safetensors --lora ad --merge-lora --format gguf --out bad.gguf
check "merge of a file that is not an adapter" "is not a LoRA adapter" export --ckpt f32.gguf --lora q8_0.gguf --merge-lora --format hf --out bad.hf
check "--merge-lora without --lora" "--merge-lora needs --lora" export --ckpt f32.gguf --merge-lora --format gguf --out bad.gguf
check "an adapter as a Hugging Face folder" "--format gguf" export --ckpt f32.gguf --lora ad --format hf --out bad.hf
check "an adapter at q8_0" "a LoRA GGUF holds f32" export --ckpt f32.gguf --lora ad --format gguf --type q8_0 --out bad.gguf
check "two adapters in one LoRA GGUF" "one adapter per LoRA GGUF" export --ckpt f32.gguf --lora ad --lora ad2 --format gguf --out bad.gguf
check "a kiln checkpoint at f16" "a kiln checkpoint holds f32" export --ckpt f32.gguf --format kiln --type f16 --out bad.st
[ "$failures" -eq 0 ]
