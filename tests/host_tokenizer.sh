#!/usr/bin/env bash
# `kiln tokenizer`: import GPT-2's files, train, encode and decode (decode(encode(x)) == x on
# random bytes), training is deterministic, and every bad input (corrupt vocab.json or
# merges.txt, a corrupt tokenizer file, --vocab below 262, unknown ids) fails with exactly
# one line on stderr and a non-zero exit code.
#   host_tokenizer.sh KILN WORKDIR
set -eu
. "$(dirname "$0")/host_common.sh"
kiln=$1
host_workdir "$2"
data=$(cd "$(dirname "$0")/data/gpt2" && pwd)
status=0
fail() { echo "FAIL: $*"; status=1; }

"$kiln" tokenizer import --vocab "$data/vocab.json" --merges "$data/merges.txt" --out gpt2.tok 2>/dev/null
$py -c "import random, sys; random.seed(7); sys.stdout.buffer.write(bytes(random.getrandbits(8) for _ in range(20000)))" >random.bin
# decode(encode(x)) == x for bytes, GPT-2 and a trained BPE
head -c 5000 random.bin >train.txt
printf 'the cat sat on the mat\n%.0s' $(seq 1 50) >>train.txt
"$kiln" tokenizer train --data train.txt --vocab 600 --out trained.tok 2>/dev/null
"$kiln" tokenizer train --data train.txt --vocab 600 --out trained2.tok 2>/dev/null
cmp trained.tok trained2.tok || fail "training twice on the same data gave different files"
for tok in "" gpt2.tok trained.tok; do
  "$kiln" tokenizer encode ${tok:+--tokenizer $tok} --input random.bin >ids.txt
  "$kiln" tokenizer decode ${tok:+--tokenizer $tok} --input ids.txt >back.bin
  cmp random.bin back.bin || fail "decode(encode(x)) != x with ${tok:-bytes}"
done
[ "$(printf ' the cat' | "$kiln" tokenizer encode --tokenizer trained.tok | wc -w)" -eq 2 ] ||
  fail "' the cat' should be two tokens of the trained BPE"
[ "$(printf 'Hello world' | "$kiln" tokenizer encode --tokenizer gpt2.tok)" = "15496 995" ] ||
  fail "GPT-2 encodes 'Hello world' as 15496 995"

# merges.txt with CRLF line ends and without its "#version" line gives the same tokenizer
tail -n +2 "$data/merges.txt" | sed 's/$/\r/' >crlf.txt
"$kiln" tokenizer import --vocab "$data/vocab.json" --merges crlf.txt --out crlf.tok 2>/dev/null
cmp gpt2.tok crlf.tok || fail "a CRLF merges.txt without #version gave another tokenizer"

# corrupt GPT-2 files, each one line
printf '{"a": 0,' >bad.json
expect_one_line_error "bad JSON" "bad.json: line 1" tokenizer import --vocab bad.json --merges "$data/merges.txt" --out x.tok
$py - "$data" <<'PY'
import json, sys
d = sys.argv[1]
vocab = json.load(open(d + "/vocab.json", encoding="utf-8"))
merges = open(d + "/merges.txt", encoding="utf-8").read().split("\n")
def write(name, obj):
    with open(name, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False)
dup = dict(vocab); dup["\u0120the"] = dup["\u0120a"]; write("dup.json", dup)
gap = dict(vocab); gap["<|endoftext|>"] = 60000; write("gap.json", gap)
open("unknown.txt", "w", encoding="utf-8").write("\n".join(merges[:5] + ["\u0120 qqqqq"] + merges[5:]))
open("onefield.txt", "w", encoding="utf-8").write("\n".join(merges[:3] + ["\u0120t"] + merges[3:]))
PY
expect_one_line_error "duplicate ids" "dup.json: the id .* is given to both" tokenizer import --vocab dup.json --merges "$data/merges.txt" --out x.tok
expect_one_line_error "ids not contiguous" "gap.json: the id 60000 .* is not contiguous" tokenizer import --vocab gap.json --merges "$data/merges.txt" --out x.tok
expect_one_line_error "a merge naming an unknown token" "unknown.txt:6: \"qqqqq\" is not in" tokenizer import --vocab "$data/vocab.json" --merges unknown.txt --out x.tok
expect_one_line_error "a merge line with one field" "onefield.txt:4: expected two tokens" tokenizer import --vocab "$data/vocab.json" --merges onefield.txt --out x.tok
expect_one_line_error "a missing merges file" "nothere.txt: cannot open" tokenizer import --vocab "$data/vocab.json" --merges nothere.txt --out x.tok
[ ! -e x.tok ] || fail "a failed import wrote x.tok"
# corrupt tokenizer files
sed '0,/^merge /s/^merge [0-9]*/merge 999999/' trained.tok >corrupt.tok  # the first merge, line 11
expect_one_line_error "a corrupt tokenizer file" "corrupt.tok:11: expected \"merge LEFT RIGHT ID\"" tokenizer encode --tokenizer corrupt.tok --input train.txt
head -c 100 gpt2.tok >cut.tok
expect_one_line_error "a truncated tokenizer file" "cut.tok:4: expected \"bytes\"" tokenizer encode --tokenizer cut.tok --input train.txt
expect_one_line_error "a vocabulary too small" "--vocab 261 is too small" tokenizer train --data train.txt --vocab 261 --out y.tok
echo "1 2 70000" >ids.txt
expect_one_line_error "an id outside the vocabulary" "id 70000 is outside the vocabulary" tokenizer decode --tokenizer gpt2.tok --input ids.txt
echo "1 x 2" >ids.txt
expect_one_line_error "not ids" "expected ids" tokenizer decode --input ids.txt
expect_one_line_error "an unknown subcommand" "expected train, import" tokenizer frobnicate

# a GPT trained on a trained BPE's tokens keeps the tokenizer in its checkpoint: eval and
# decode find it there, and a tokenizer of another size is refused
"$kiln" train --data train.txt --tokenizer trained.tok --out gpt --backend cpu --layers 1 --heads 2 --dim 16 \
  --block 16 --batch 4 --steps 3 --eval-every 3 >gpt.out 2>gpt.err || { cat gpt.err; fail "kiln train --tokenizer"; }
"$kiln" eval --ckpt gpt/model.safetensors --data train.txt --backend cpu >eval.out 2>/dev/null ||
  fail "kiln eval found no tokenizer in the checkpoint"
grep -q '^loss ' eval.out || fail "kiln eval printed no loss"
"$kiln" decode --ckpt gpt/model.safetensors --prompt "the " --max-new 5 --backend cpu >/dev/null 2>&1 ||
  fail "kiln decode found no tokenizer in the checkpoint"
expect_one_line_error "a tokenizer of another size" "has 50257 tokens but the model's vocabulary" \
  decode --ckpt gpt/model.safetensors --tokenizer gpt2.tok --prompt "the " --backend cpu
exit $status
