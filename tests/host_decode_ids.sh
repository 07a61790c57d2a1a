#!/usr/bin/env bash
# `kiln decode --prompt-ids` and `--print-ids` (the contract's form: the generated ids only,
# decimal, one space between, a newline at the end; the prompt's first with --echo), their
# text is the text mode's, a prompt id outside the vocabulary or a malformed list fails in one
# line that names it and its position, and decoding stops after an end-of-generation token
# (a trained BPE's [EOS]) unless --ignore-eog.
#   host_decode_ids.sh KILN WORKDIR
set -eu
. "$(dirname "$0")/host_common.sh"
host_setup "$1" "$2" cpu

numbered_lines 400 "line %d: the quick brown fox jumps over the lazy dog." >data.txt
"$kiln" tokenizer train --data data.txt --vocab 300 --out bpe.tok 2>/dev/null
"$kiln" train --data data.txt --tokenizer bpe.tok --out run --layers 1 --heads 2 --dim 32 --block 32 --batch 4 \
  --steps 20 --backend cpu >/dev/null 2>&1
ckpt=run/model.safetensors
dec() { "$kiln" decode --ckpt "$ckpt" --backend cpu "$@"; }

dec --prompt-ids 108,105,110 --max-new 12 --greedy --print-ids --ignore-eog >ids.txt 2>/dev/null
grep -qE '^[0-9]+( [0-9]+){11}$' ids.txt && [ "$(wc -l <ids.txt)" -eq 1 ] || fail "--print-ids: '$(cat ids.txt)'"
dec --prompt-ids 108,105,110 --max-new 12 --greedy --print-ids --ignore-eog --echo >echo.txt 2>/dev/null
[ "$(cat echo.txt)" = "108 105 110 $(cat ids.txt)" ] || fail "--echo --print-ids: '$(cat echo.txt)'"
# the ids' text is what the text mode prints
dec --prompt-ids 108,105,110 --max-new 12 --greedy --ignore-eog >text.txt 2>/dev/null
"$kiln" tokenizer decode --tokenizer bpe.tok --input ids.txt >back.txt
cmp -s text.txt back.txt || fail "the ids' text differs from the text mode's"
# --prompt TEXT is the prompt of TEXT's ids
printf 'line 7: the' >prompt.txt
prompt_ids=$("$kiln" tokenizer encode --tokenizer bpe.tok --input prompt.txt | tr ' ' ',')
dec --prompt "line 7: the" --max-new 12 --greedy --print-ids --ignore-eog >from_text.txt 2>/dev/null
dec --prompt-ids "$prompt_ids" --max-new 12 --greedy --print-ids --ignore-eog >from_ids.txt 2>/dev/null
cmp -s from_ids.txt from_text.txt || fail "--prompt and --prompt-ids $prompt_ids differ"

expect_one_line_error "an id outside the vocabulary" "--prompt-ids: the id 300 (id 3 of the list) is outside the model's vocabulary (0..299)" \
  decode --ckpt "$ckpt" --backend cpu --prompt-ids 1,2,300 --max-new 2
expect_one_line_error "a malformed list" "--prompt-ids: \"1,x\" is not a comma-separated list of ids (at id 2)" \
  decode --ckpt "$ckpt" --backend cpu --prompt-ids 1,x
expect_one_line_error "both prompts" "kiln decode needs --prompt TEXT or --prompt-ids IDS" \
  decode --ckpt "$ckpt" --backend cpu --prompt a --prompt-ids 1

# an end of generation: sampling hot enough meets [EOS] (258) long before 3000 tokens
dec --prompt-ids 108 --max-new 3000 --temperature 50 --seed 3 --print-ids >eog.txt 2>eog_err.txt
n=$(wc -w <eog.txt)
last=$(tr ' ' '\n' <eog.txt | tail -1)
[ "$n" -lt 3000 ] && [ "$last" = 258 ] && grep -q "stopped at an end-of-generation token" eog_err.txt ||
  fail "no stop at [EOS]: $n ids, the last $last"
dec --prompt-ids 108 --max-new 3000 --temperature 50 --seed 3 --print-ids --ignore-eog >all.txt 2>/dev/null
[ "$(wc -w <all.txt)" -eq 3000 ] || fail "--ignore-eog: $(wc -w <all.txt) ids"
[ "$(cut -c1-$(wc -c <eog.txt | awk '{print $1 - 1}') all.txt)" = "$(cat eog.txt)" ] || fail "--ignore-eog changed the ids before the stop"
echo "ok: stopped at [EOS] after $n ids; --ignore-eog gives 3000"
[ $failures -eq 0 ]
