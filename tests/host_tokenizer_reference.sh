#!/usr/bin/env bash
# `kiln tokenizer` against the Python references on random mixed text: GPT-2's ids from
# tests/gpt2_reference.py (OpenAI's encoder.py algorithm), and a trained BPE's merges from
# tests/bpe_train_reference.py (a naive trainer with kiln's rules). Skipped (77) when
# /usr/bin/python3 lacks the regex module (apt-get install python3-regex).
#   host_tokenizer_reference.sh KILN WORKDIR
set -eu
kiln=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/host_common.sh"
host_workdir "$2"
/usr/bin/python3 -c "import regex" 2>/dev/null ||
  { echo "skipped: /usr/bin/python3 has no regex module (apt-get install python3-regex)"; exit 77; }
status=0
fail() { echo "FAIL: $*"; status=1; }

# a few KB of random mixed text: words, code, accents, CJK, emoji (ZWJ, skin tones), digits,
# whitespace runs, and bytes that are not UTF-8
/usr/bin/python3 - <<'PY'
import random
pieces = ["the", " cat", " It's", "'re", "'ll", " DON'T", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " ", "x = f(y[0]);",
          "caf\u00e9", " na\u00efve", "e\u0301", "\u65e5\u672c", " \u4e2d\u6587", "\ud55c", "\U0001F600", "\U0001F44D\U0001F3FD",
          "\U0001F468\u200d\U0001F469\u200d\U0001F467", "123", " 4.5", "\u0663", "\u00bd", "\u00a0", "\u3000", "?!", "--", "\u2028"]
bad = [b"\xff", b"\x80", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xc0\xaf"]
for seed in range(5):
    random.seed(seed)
    out = bytearray()
    while len(out) < 4000:
        out += random.choice(bad) if random.random() < 0.08 else random.choice(pieces).encode()
    open("mixed%d.bin" % seed, "wb").write(out)
PY
data=$here/data/gpt2
"$kiln" tokenizer import --vocab "$data/vocab.json" --merges "$data/merges.txt" --out gpt2.tok 2>/dev/null
for seed in 0 1 2 3 4; do
  "$kiln" tokenizer encode --tokenizer gpt2.tok --input mixed$seed.bin >kiln.ids
  /usr/bin/python3 "$here/gpt2_reference.py" "$data/vocab.json" "$data/merges.txt" encode mixed$seed.bin >ref.ids
  if cmp -s kiln.ids ref.ids; then
    echo "ok: mixed$seed.bin: $(wc -w <ref.ids) ids as gpt2_reference.py gives them"
  else
    fail "mixed$seed.bin: kiln's ids differ from gpt2_reference.py's"
  fi
done
# a trained BPE's merges, in order, as the naive trainer makes them
cat mixed0.bin mixed1.bin >train.bin
"$kiln" tokenizer train --data train.bin --vocab 700 --out trained.tok 2>/dev/null
grep '^merge ' trained.tok >kiln.merges
/usr/bin/python3 "$here/bpe_train_reference.py" train.bin 700 >ref.merges
if cmp -s kiln.merges ref.merges; then
  echo "ok: $(wc -l <ref.merges) merges as bpe_train_reference.py makes them"
else
  fail "the trained merges differ from bpe_train_reference.py's"
fi
exit $status
