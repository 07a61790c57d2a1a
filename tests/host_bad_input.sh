#!/usr/bin/env bash
# Bad input to the kiln program: every case must exit non-zero (not by a signal) with exactly
# one line on stderr, "kiln: error: ...". Also: --help works, and an existing checkpoint is
# never left half-written (a run killed while it checkpoints leaves a loadable file).
#   host_bad_input.sh KILN WORKDIR
set -u
. "$(dirname "$0")/host_common.sh"
kiln=$1
host_workdir "$2" || exit 1
failures=0

# expect_error DESCRIPTION COMMAND...: runs `kiln COMMAND...`
expect_error() {
  local what=$1
  shift
  "$kiln" "$@" >stdout.txt 2>stderr.txt
  local rc=$?
  local lines
  lines=$(wc -l <stderr.txt)
  if [ "$rc" -eq 0 ] || [ "$rc" -ge 128 ] || [ "$lines" -ne 1 ] || ! grep -q '^kiln: error: ' stderr.txt; then
    echo "FAIL $what: exit $rc, $lines stderr lines:"
    sed 's/^/    /' stderr.txt | head -20
    failures=$((failures + 1))
  else
    echo "ok   $what: $(cat stderr.txt)"
  fi
}

# expect_message DESCRIPTION PATTERN COMMAND...: expect_error, and the line matches PATTERN
# (grep's basic regular expression).
expect_message() {
  local what=$1 pattern=$2
  shift 2
  expect_error "$what" "$@"
  if ! grep -q -- "$pattern" stderr.txt; then
    echo "FAIL $what: the message does not say \"$pattern\""
    failures=$((failures + 1))
  fi
}

expect_ok() {
  local what=$1
  shift
  if "$kiln" "$@" >stdout.txt 2>stderr.txt; then
    echo "ok   $what"
  else
    echo "FAIL $what: exit $?"
    sed 's/^/    /' stderr.txt | head -20
    failures=$((failures + 1))
  fi
}

# ---- inputs ----
numbered_lines 200 "line %d: the quick brown fox jumps over the lazy dog" >text.txt
: >empty.txt
printf 'tiny' >tiny.txt
tiny_model=(--layers 1 --heads 2 --dim 8 --block 16 --eval-every 0 --backend cpu)
"$kiln" train --data text.txt --out good "${tiny_model[@]}" --batch 2 --steps 2 >/dev/null 2>&1 ||
  { echo "FAIL: could not train the small checkpoint the cases start from"; exit 1; }
good=good/model.safetensors

# mutate SRC DST PYTHON-CODE: the code edits `header` (a dict) and/or `data` (bytes) and
# may set `raw_header` (bytes) to write the header verbatim or `length` (8 bytes) to lie
# about its length.
mutate() {
  "$py" - "$1" "$2" "$3" <<'EOF'
import json, struct, sys
src, dst, code = sys.argv[1:4]
blob = open(src, "rb").read()
n = struct.unpack("<Q", blob[:8])[0]
header = json.loads(blob[8:8 + n])
data = blob[8 + n:]
raw_header = None
length = None
exec(code)
text = raw_header if raw_header is not None else json.dumps(header).encode()
if length is None:
    length = struct.pack("<Q", len(text))
open(dst, "wb").write(length + text + data)
EOF
}

# expect_refused DESCRIPTION CHECKPOINT: `kiln eval` must refuse the checkpoint.
expect_refused() {
  expect_error "$1" eval --ckpt "$2" --data text.txt --backend cpu
}

# expect_mutation_refused DESCRIPTION FILE PYTHON-CODE: the good checkpoint mutated by the
# code (see mutate) into FILE, which `kiln eval` must refuse.
expect_mutation_refused() {
  mutate "$good" "$2" "$3"
  expect_refused "$1" "$2"
}

# ---- options ----
expect_ok "kiln --help" --help
expect_ok "kiln train --help" train --help
expect_absent() { # DESCRIPTION TEXT: the last command's stdout does not hold TEXT
  if grep -qF -- "$2" stdout.txt; then
    echo "FAIL $1: $(grep -F -- "$2" stdout.txt | head -1)"
    failures=$((failures + 1))
  else
    echo "ok   $1"
  fi
}
expect_absent "train's help says (repeatable) once" "(repeatable) (repeatable)"
OMP_NUM_THREADS=1 expect_ok "kiln info on one thread" info
expect_absent "one cpu thread is singular in kiln info" "1 OpenMP threads"
OMP_NUM_THREADS=1 expect_ok "kiln bench on one thread" bench --only ceilings --quick --backend cpu
expect_absent "one cpu thread is singular in the device's name and driver" "1 threads"
expect_ok "kiln eval --help" eval --help
expect_ok "kiln decode --help" decode --help
expect_error "no command arguments: unknown command" frobnicate
expect_error "train without --data" train --out o
expect_error "missing data file" train --data missing.txt --out o --backend cpu
expect_error "empty data file" train --data empty.txt --out o --backend cpu
expect_error "data shorter than a block" train --data tiny.txt --out o "${tiny_model[@]}"
expect_error "--heads not dividing --dim" train --data text.txt --out o --heads 3 --dim 128 --backend cpu
expect_error "--steps -1" train --data text.txt --out o --steps -1 --backend cpu
expect_error "--steps 0" train --data text.txt --out o --steps 0 --backend cpu
expect_error "--lr abc" train --data text.txt --out o --lr abc --backend cpu
expect_error "--lr nan" train --data text.txt --out o --lr nan --backend cpu
expect_error "--lr 1e-3x" train --data text.txt --out o --lr 1e-3x --backend cpu
expect_error "--lr 0" train --data text.txt --out o --lr 0 --backend cpu
expect_error "--min-lr above --lr" train --data text.txt --out o --lr 1e-3 --min-lr 1e-2 --backend cpu
expect_error "--dropout 1.5" train --data text.txt --out o --dropout 1.5 --backend cpu
expect_error "--batch 2.5" train --data text.txt --out o --batch 2.5 --backend cpu
expect_error "--seed -3" train --data text.txt --out o --seed -3 --backend cpu
expect_error "--layers 99999999999" train --data text.txt --out o --layers 99999999999 --backend cpu
expect_error "unknown option" train --data text.txt --out o --frobnicate 3
expect_error "option without its value" train --data text.txt --out o --steps
expect_error "option given twice" train --data text.txt --out o --steps 3 --steps 4
expect_error "positional argument" train text.txt
expect_error "unknown backend" train --data text.txt --out o --backend nosuch
expect_error "no such cpu device" train --data text.txt --out o --backend cpu --device 7
expect_error "--init and --resume together" train --data text.txt --out o --init "$good" --resume
expect_error "--resume with nothing to resume" train --data text.txt --out empty_run --resume --backend cpu
expect_error "--init with a missing checkpoint" train --data text.txt --out o --init missing.safetensors --backend cpu
expect_error "--init with --layers that disagree" train --data text.txt --out o --init "$good" --layers 3 --backend cpu
expect_error "--resume with another --batch" train --data text.txt --out good "${tiny_model[@]}" --batch 3 --steps 4 --resume
expect_error "eval without --ckpt" eval --data text.txt
expect_message "eval of a missing data file" "nosuch.txt: cannot open the evaluation data" \
  eval --ckpt "$good" --data nosuch.txt --backend cpu
expect_error "eval of an empty data file" eval --ckpt "$good" --data empty.txt --backend cpu
expect_error "eval of a file shorter than one window" eval --ckpt "$good" --data tiny.txt --backend cpu
expect_error "decode with a prompt longer than the context" decode --ckpt "$good" --backend cpu \
  --prompt "this prompt is much longer than sixteen bytes" --max-new 4
expect_error "decode --top-p 0" decode --ckpt "$good" --backend cpu --prompt "the" --top-p 0
expect_error "decode --temperature -1" decode --ckpt "$good" --backend cpu --prompt "the" --temperature -1
expect_error "--precision that does not exist" train --data text.txt --out o --precision fp8
expect_error "--loss-scale-init without fp16" train --data text.txt --out o --loss-scale-init 1024
expect_error "--loss-scale-backoff above 1" train --data text.txt --out o --precision fp16 --loss-scale-backoff 2
expect_error "--loss-scale-growth below 1" train --data text.txt --out o --precision fp16 --loss-scale-growth 0.5
expect_error "--loss-scale-init 0" train --data text.txt --out o --precision fp16 --loss-scale-init 0
expect_error "--loss-scale-interval 0" train --data text.txt --out o --precision fp16 --loss-scale-interval 0
expect_error "--resume an fp32 run in fp16" train --data text.txt --out good "${tiny_model[@]}" --batch 2 --steps 4 --resume --precision fp16
expect_error "eval --precision fp64" eval --ckpt "$good" --data text.txt --backend cpu --precision fp64
expect_error "decode --precision half" decode --ckpt "$good" --prompt "the" --backend cpu --precision half

expect_message "plot to a missing folder names the file asked for, not a temporary one" \
  "^kiln: error: nosuch/p.svg: [^.]*: No such file" plot good -o nosuch/p.svg

"$kiln" train --data text.txt --out warm "${tiny_model[@]}" --batch 2 --steps 2 --warmup 2 >/dev/null 2>stderr.txt
if [ "$(grep -c '^kiln train: warning: --warmup 2 is not below --steps 2' stderr.txt)" -eq 1 ]; then
  echo "ok   --warmup >= --steps: one warning line"
else
  echo "FAIL --warmup >= --steps: no single warning line:"
  sed 's/^/    /' stderr.txt | head -20
  failures=$((failures + 1))
fi

# ---- checkpoints: truncated, corrupt, lying ----
head -c 5 "$good" >short.safetensors
expect_refused "checkpoint shorter than its length field" short.safetensors
head -c 2000 "$good" >truncated.safetensors
expect_refused "truncated checkpoint" truncated.safetensors
head -c 4096 /dev/urandom >garbage.safetensors
expect_refused "random bytes as a checkpoint" garbage.safetensors
expect_mutation_refused "huge header length" huge_header.safetensors 'length = struct.pack("<Q", 1 << 62)'
expect_mutation_refused "header that is not JSON" bad_json.safetensors 'raw_header = b"{\"wte.weight\": {" + b" " * 6'
expect_mutation_refused "data offsets past the end" past_end.safetensors 'header["ln_f.bias"]["data_offsets"][1] += 1000'
expect_mutation_refused "negative shape" negative.safetensors 'header["ln_f.bias"]["shape"] = [-8]'
expect_mutation_refused "shape that disagrees with the config" lying_shape.safetensors '
w = header["wpe.weight"]; w["shape"] = [8, 16]'
expect_mutation_refused "config with more layers than tensors" lying_config.safetensors 'header["__metadata__"]["n_layer"] = "1000"'
expect_mutation_refused "config value that is not a number" bad_config.safetensors 'header["__metadata__"]["n_embd"] = "eight"'
expect_mutation_refused "config whose n_head does not divide n_embd" heads_config.safetensors 'header["__metadata__"]["n_head"] = "3"'
expect_mutation_refused "unknown tensor names" unknown_key.safetensors '
header["h.0.attn.extra"] = dict(header["ln_f.bias"])
header["zzz"] = dict(header["ln_f.weight"])
header.pop("ln_f.bias"); header.pop("ln_f.weight")'
expect_mutation_refused "missing tensor" missing_tensor.safetensors '
header["h.0.attn.bias"] = header.pop("h.0.ln_2.bias")'
expect_mutation_refused "no config anywhere" no_config.safetensors 'header["__metadata__"] = {"format": "pt"}'
expect_mutation_refused "integer weights" int_weights.safetensors '
header["ln_f.bias"]["dtype"] = "I32"'
: >empty.gguf
printf 'G' >one.gguf
expect_message "empty .gguf" "empty.gguf: too short to be a GGUF file (0 bytes)" \
  eval --ckpt empty.gguf --data text.txt --backend cpu
expect_message "1-byte .gguf" "one.gguf: too short to be a GGUF file (1 byte)" \
  decode --ckpt one.gguf --prompt "the" --backend cpu
expect_error "--init with a corrupt checkpoint" train --data text.txt --out o --init truncated.safetensors --backend cpu
expect_error "decode with a corrupt checkpoint" decode --ckpt garbage.safetensors --prompt "the" --backend cpu
expect_error "bench decode with a corrupt --ckpt (said once)" bench decode --quick --ckpt garbage.safetensors \
  --backend cpu

# ---- an existing checkpoint is never left half-written ----
# A run that checkpoints every step is killed at several moments; each time the files in
# its directory must still load.
"$kiln" train --data text.txt --out killed "${tiny_model[@]}" --steps 2 >/dev/null 2>&1
cp killed/model.safetensors before.safetensors
expect_error "resume refused (bad option) leaves the checkpoint alone" \
  train --data text.txt --out killed "${tiny_model[@]}" --steps 4 --resume --lr abc
cmp -s before.safetensors killed/model.safetensors || { echo "FAIL: checkpoint changed"; failures=$((failures + 1)); }
for delay in 0.3 0.6 0.9; do
  "$kiln" train --data text.txt --out killed "${tiny_model[@]}" --steps 100000 --eval-every 1 \
    --eval-windows 1 >/dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if "$kiln" eval --ckpt killed/model.safetensors --data text.txt --backend cpu >/dev/null 2>stderr.txt; then
    echo "ok   checkpoint loads after kill -9 at ${delay}s"
  else
    echo "FAIL checkpoint after kill -9 at ${delay}s: $(cat stderr.txt)"
    failures=$((failures + 1))
  fi
done

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
