#!/usr/bin/env bash
# The encoder-decoder end to end (kiln train --model seq2seq, eval, decode) on one backend:
#   - a small model learns to reverse and to copy random letter strings: >= 99% exact
#     matches on held-out strings, greedy and with a beam of 4, the beam never worse;
#   - eval and decode --input-file show progress on a terminal, with the same stdout;
#   - 10 steps plus a resumed 10 equal 20 uninterrupted steps exactly, also when the resume
#     leaves --batch-tokens out; the run ends with the steps' throughput line;
#   - bad input (cpu only): a TSV line without a tab, an empty side, a tokenizer without
#     [BOS]/[EOS], a GPT's options given to a seq2seq checkpoint and the other way round:
#     one line and a non-zero exit.
# usage: host_seq2seq.sh KILN WORKDIR [BACKEND]
# KILN_TEST_QUICK=1 (the sanitizer build in .ci/run) trains 60 steps instead of 1000 and
# checks what the commands do, not what the model learned: every code path, a fraction of
# the time.
set -u
. "$(dirname "$0")/host_common.sh"
host_setup "$1" "$2" "${3:-cpu}"
fail=0

# random strings over a..j of 3 to 8 letters, and their reverses or copies (awk's RNG seeded,
# so every run sees the same data)
make_pairs() { # COUNT SEED reverse|copy
  awk -v n="$1" -v seed="$2" -v kind="$3" 'BEGIN {
    srand(seed)
    for (i = 0; i < n; i++) {
      len = 3 + int(rand() * 6); s = ""
      for (j = 0; j < len; j++) s = s substr("abcdefghij", 1 + int(rand() * 10), 1)
      t = s
      if (kind == "reverse") { t = ""; for (j = len; j >= 1; j--) t = t substr(s, j, 1) }
      print s "\t" t
    }
  }'
}

# the paper's Post-LN and an Xavier init; no dropout or smoothing on a noiseless task
small=(--model seq2seq --backend "$backend" --dim 32 --heads 4 --layers 2 --max-len 12 --batch-tokens 1024
       --lr-schedule cosine --lr 3e-3 --min-lr 1e-5 --warmup 50 --dropout 0 --label-smoothing 0 --seed 7)

quick=${KILN_TEST_QUICK:-0}
steps=1000
[ "$quick" = 1 ] && steps=60

for task in reverse copy; do
  make_pairs 20000 1 "$task" >"$task.tsv"
  make_pairs 200 2 "$task" >"$task-test.tsv"
  "$kiln" train "${small[@]}" --data "$task.tsv" --out "$task" --steps "$steps" --eval-every "$steps" \
    >/dev/null 2>"$task.log" || { echo "FAIL: training on $task"; cat "$task.log"; exit 1; }
  "$kiln" eval --backend "$backend" --ckpt "$task/model.safetensors" --data "$task-test.tsv" >"$task.greedy" 2>/dev/null
  "$kiln" eval --backend "$backend" --ckpt "$task/model.safetensors" --data "$task-test.tsv" --beam 4 \
    >"$task.beam" 2>/dev/null
  greedy=$(awk '$1 == "exact" { print $2 }' "$task.greedy")
  beam=$(awk '$1 == "exact" { print $2 }' "$task.beam")
  echo "$task: exact matches greedy $greedy, beam 4 $beam ($(tail -n 1 "$task.log"))"
  grep -Eq "^kiln train: $steps steps in [0-9.]+ s \([0-9]+ tokens/s\)$" "$task.log" ||
    { echo "FAIL: training on $task printed no 'N steps in X s (T tokens/s)' line"; fail=1; }
  [ "$quick" = 1 ] && continue
  awk -v g="$greedy" -v b="$beam" 'BEGIN { exit !(g >= 0.99 && b >= 0.99 && b >= g) }' ||
    { echo "FAIL: $task needs >= 0.99 exact matches, greedy and beam, and the beam no worse"; fail=1; }
done

# a translation on the command line and a file of inputs, one output line each (an empty
# line stays empty)
out=$("$kiln" decode --backend "$backend" --ckpt reverse/model.safetensors --input abcdefg 2>/dev/null) ||
  { echo "FAIL: decode --input"; fail=1; }
[ "$quick" = 1 ] || [ "$out" = "gfedcba" ] || { echo "FAIL: decode --input abcdefg gave '$out'"; fail=1; }
printf 'abcde\nhijabc\n\nccbadj\n' >inputs.txt
for search in "--beam 3" "--batch 3"; do
  "$kiln" decode --backend "$backend" --ckpt reverse/model.safetensors --input-file inputs.txt $search \
    >outputs.txt 2>/dev/null || { echo "FAIL: decode --input-file $search"; fail=1; }
  [ "$(wc -l <outputs.txt)" -eq 4 ] && [ -z "$(sed -n 3p outputs.txt)" ] ||
    { echo "FAIL: --input-file $search did not give one line per input line"; fail=1; }
  [ "$quick" = 1 ] || [ "$(printf 'edcba\ncbajih\n\njdabcc')" = "$(cat outputs.txt)" ] ||
    { echo "FAIL: --input-file $search gave:"; cat outputs.txt; fail=1; }
done

# progress on a terminal (stderr), the same stdout as off it (script(1) gives the terminal)
if command -v script >/dev/null; then
  tty_run() { # NAME KILN-ARGS...: stdout to NAME.out, the terminal's bytes to NAME.tty
    local name=$1
    shift
    script -qec "$(printf '%q ' "$kiln" "$@") >$name.out" /dev/null >"$name.tty" 2>&1
  }
  decode_args=(decode --backend "$backend" --ckpt reverse/model.safetensors --input-file inputs.txt --beam 3)
  eval_args=(eval --backend "$backend" --ckpt reverse/model.safetensors --data reverse-test.tsv --beam 2)
  for what in decode eval; do
    declare -n args="${what}_args"
    "$kiln" "${args[@]}" >"$what.plain" 2>"$what.err" || { echo "FAIL: $what off a terminal"; fail=1; }
    grep -q $'\033' "$what.err" && { echo "FAIL: $what off a terminal drew a bar"; fail=1; }
    tty_run "$what" "${args[@]}" || { echo "FAIL: $what on a terminal"; fail=1; }
    cmp -s "$what.plain" "$what.out" || { echo "FAIL: $what's stdout differs on a terminal"; fail=1; }
    unit=lines
    [ $what = eval ] && unit="pairs translated"
    total=$([ $what = eval ] && wc -l <reverse-test.tsv || wc -l <inputs.txt)
    tr '\r' '\n' <"$what.tty" | grep -q "^.*kiln $what: $total/$total $unit  ETA " &&
      echo "ok: $what on a terminal shows its progress ($total/$total $unit), the same stdout" ||
      { echo "FAIL: $what on a terminal showed no '$total/$total $unit' line: $(tr '\r' '\n' <"$what.tty" | tail -n 3)"; fail=1; }
  done
fi

# exact resume
head -n 400 copy.tsv >tiny.tsv
expect_exact_resume "${small[@]}" --data tiny.tsv --eval-every 5 || fail=1
expect_resume_keeps_batch --batch-tokens "${small[@]}" --data tiny.tsv --eval-every 5 || fail=1

if [ "$backend" = cpu ]; then
  # refused in one line with a non-zero exit
  expect_refused() { expect_kiln_refused "$@"; }
  printf 'abc\tcba\nno tab here\n' >no_tab.tsv
  printf 'abc\tcba\nabc\t\n' >empty_side.tsv
  expect_refused "a line without a tab" "no_tab.tsv:2" train --model seq2seq --data no_tab.tsv --out bad
  expect_refused "an empty target" "empty_side.tsv:2" train --model seq2seq --data empty_side.tsv --out bad
  # bytes alone, no special tokens (docs/tokenizers.md's format)
  { echo "kiln-tokenizer 1"; echo "vocab 256"; echo "pretokenizer none"; echo "bytes $(seq -s ' ' 0 255)"; } >nospecial.tok
  expect_refused "a tokenizer without [BOS]/[EOS]" "BOS" train --model seq2seq --data reverse.tsv --out bad \
    --tokenizer nospecial.tok --steps 1
  expect_refused "a GPT prompt for a seq2seq checkpoint" "encoder-decoder" decode --ckpt reverse/model.safetensors \
    --prompt abc --backend cpu
  expect_refused "a seq2seq checkpoint to start a GPT" "seq2seq" train --data reverse.tsv --out bad \
    --init reverse/model.safetensors --backend cpu --steps 1
fi
exit $fail
