#!/usr/bin/env bash
# BERT's masked LM end to end (kiln train --model bert, kiln eval) on one backend:
#   - on text with learnable structure (each line 20 consecutive letters of the cyclic
#     alphabet from a random start: a masked letter follows from its neighbours) a small
#     model's held-out MLM accuracy rises far above the unigram baseline (always guessing the
#     most frequent token, computed here from the text): at least baseline + 0.5;
#   - metrics.jsonl has mlm_accuracy at the evaluations only; config.json is Hugging Face's;
#   - kiln eval --split held-out gives the loss and accuracy training printed;
#   - a trained BPE tokenizer (--tokenizer) trains and evaluates too;
#   - 10 steps plus a resumed 10 equal 20 uninterrupted steps exactly, also when the resume
#     leaves --batch out; the run ends with the steps' throughput line;
#   - bad input (cpu only): a tokenizer without [CLS]/[SEP]/[MASK], --block below 3, text
#     too short for --block, a GPT checkpoint to resume as BERT, a BERT checkpoint given to
#     the GPT's decode, an unknown --split: one line and a non-zero exit.
# KILN_TEST_QUICK=1 (the sanitizer build in .ci/run) trains 150 steps instead of 1500 and
# checks the code paths, not the accuracy.
# usage: host_bert.sh KILN WORKDIR [BACKEND]
set -u
. "$(dirname "$0")/host_common.sh"
host_setup "$1" "$2" "${3:-cpu}"
fail=0

# 3000 lines of 20 letters (awk's RNG seeded: every run sees the same text)
awk 'BEGIN { srand(2); a = "abcdefghijklmnopqrstuvwxyz"
  for (i = 0; i < 3000; i++) { s = int(rand() * 26); line = ""
    for (j = 0; j < 20; j++) line = line substr(a, 1 + (s + j) % 26, 1)
    print line } }' >cycle.txt

# the unigram baseline: the most frequent byte's share of the held-out tenth (newlines count:
# they are tokens and can be masked)
baseline=$(tail -c $(($(wc -c <cycle.txt) / 10)) cycle.txt | od -An -v -tu1 | tr -s ' ' '\n' | grep -v '^$' |
  sort | uniq -c | sort -rn | awk 'NR == 1 { top = $1 } { n += $1 } END { printf "%.4f", top / n }')

# (Post-LN, BERT's default, learns it in a sudden drop that comes between steps 250 and 750
# across seeds: 1500 steps leave a wide margin)
small=(--model bert --backend "$backend" --layers 2 --heads 4 --dim 64 --batch 16 --lr 3e-3 --seed 1)
quick=${KILN_TEST_QUICK:-0}
steps=1500
[ "$quick" = 1 ] && steps=150
"$kiln" train "${small[@]}" --data cycle.txt --out cycle --steps $steps --eval-every $((steps / 3)) --block 32 >train.out 2>train.log ||
  { echo "FAIL: training"; cat train.log; exit 1; }
grep -Eq "^kiln train: $steps steps in [0-9.]+ s \([0-9]+ tokens/s\)$" train.log ||
  { echo "FAIL: training printed no 'N steps in X s (T tokens/s)' line"; fail=1; }
acc=$(awk '$1 == "val" && $2 == "accuracy" { print $3 }' train.out)
loss=$(awk '$1 == "val" && $2 == "loss" { print $3 }' train.out)
echo "held-out MLM accuracy $acc (loss $loss), unigram baseline $baseline"
[ "$quick" = 1 ] || awk -v a="$acc" -v b="$baseline" 'BEGIN { exit !(a != "" && a >= b + 0.5) }' ||
  { echo "FAIL: the MLM accuracy $acc is not at least the baseline $baseline + 0.5"; fail=1; }

# mlm_accuracy exactly on the rows that evaluated (steps 500, 1000, 1500; quick: 50, 100, 150)
[ "$(grep -c '"mlm_accuracy"' cycle/metrics.jsonl)" -eq 3 ] &&
  [ "$(grep '"mlm_accuracy"' cycle/metrics.jsonl | grep -c '"val_loss"')" -eq 3 ] ||
  { echo "FAIL: metrics.jsonl should have mlm_accuracy on the 3 evaluation rows"; fail=1; }
"$py" -c 'import json, sys
c = json.load(open(sys.argv[1]))
assert c["model_type"] == "bert" and c["hidden_act"] == "gelu_new" and c["architectures"] == ["BertForMaskedLM"]
assert (c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["intermediate_size"],
        c["max_position_embeddings"], c["vocab_size"]) == (64, 2, 4, 256, 32, 262), c' cycle/config.json ||
  { echo "FAIL: config.json"; fail=1; }

# eval on the held-out tenth gives what training printed
"$kiln" eval --backend "$backend" --ckpt cycle/model.safetensors --data cycle.txt --split held-out >eval.out 2>/dev/null ||
  { echo "FAIL: kiln eval"; fail=1; }
eval_acc=$(awk '$1 == "accuracy" { print $2 }' eval.out)
eval_loss=$(awk '$1 == "loss" { print $2 }' eval.out)
# (training prints 4 decimals, eval 6)
[ "$eval_acc" = "$acc" ] && awk -v a="$eval_loss" -v b="$loss" 'BEGIN { d = a - b; exit !(a != "" && d * d <= 1e-8) }' ||
  { echo "FAIL: kiln eval gave loss $eval_loss accuracy $eval_acc, training $loss and $acc"; fail=1; }

# a BPE tokenizer of kiln's own
"$kiln" tokenizer train --data cycle.txt --vocab 300 --out cycle.tok 2>/dev/null || { echo "FAIL: tokenizer train"; fail=1; }
"$kiln" train "${small[@]}" --data cycle.txt --tokenizer cycle.tok --out bpe --steps 20 --block 16 >bpe.out 2>bpe.log &&
  "$kiln" eval --backend "$backend" --ckpt bpe/model.safetensors --data cycle.txt --split held-out >bpe.eval 2>/dev/null &&
  grep -q '^accuracy ' bpe.eval || { echo "FAIL: training with --tokenizer"; cat bpe.log; fail=1; }

# exact resume
head -n 300 cycle.txt >tiny.txt
expect_exact_resume "${small[@]}" --data tiny.txt --eval-every 5 --block 16 || fail=1
expect_resume_keeps_batch --batch "${small[@]}" --data tiny.txt --eval-every 5 --block 16 || fail=1

if [ "$backend" = cpu ]; then
  # refused in one line with a non-zero exit
  expect_refused() { expect_kiln_refused "$@"; }
  { echo "kiln-tokenizer 1"; echo "vocab 258"; echo "pretokenizer none"; echo "bytes $(seq -s ' ' 0 255)"
    echo "special 256 [CLS] cls"; echo "special 257 [SEP] sep"; } >nomask.tok
  expect_refused "a tokenizer without [MASK]" "no \[MASK\] token" train --model bert --data cycle.txt --out bad \
    --tokenizer nomask.tok --steps 1
  expect_refused "--block 2" "block" train --model bert --data cycle.txt --out bad --block 2 --steps 1
  printf 'abcdef\n' >short.txt
  expect_refused "text too short for --block" "short.txt" train --model bert --data short.txt --out bad --block 32 \
    --steps 1 --backend cpu
  "$kiln" train --data tiny.txt --out gpt --steps 1 --layers 1 --heads 2 --dim 16 --block 8 --backend cpu \
    >/dev/null 2>&1 || { echo "FAIL: a GPT for the refusals"; fail=1; }
  expect_refused "a GPT checkpoint resumed as BERT" "not a BERT checkpoint" train --model bert --data tiny.txt \
    --out gpt --resume --steps 2 --backend cpu
  expect_refused "a BERT checkpoint to the GPT's decode" "BERT" decode --ckpt cycle/model.safetensors --prompt abc \
    --backend cpu
  expect_refused "an unknown --split" "--split" eval --ckpt cycle/model.safetensors --data cycle.txt --split val \
    --backend cpu
fi
exit $fail
