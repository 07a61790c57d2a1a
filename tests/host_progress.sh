#!/usr/bin/env bash
# Progress of long commands on stderr, never on stdout (run/count_progress.h):
#   - kiln eval of a GPT, of BERT (windows) and of seq2seq (its loss pass: batches scored;
#     then pairs translated) on a terminal draws "kiln eval: N/N windows  ETA ..." in place, and
#     its stdout is byte-identical to a run off a terminal, whose stderr has no bar;
#   - the first use of a device is announced (host_verify.sh), seq2seq's eval and decode
#     --input-file show theirs (host_seq2seq.sh).
# A terminal comes from util-linux's script(1); without it the test is skipped.
#   host_progress.sh KILN WORKDIR [BACKEND]
set -u
. "$(dirname "$0")/host_common.sh"
host_setup "$@"
command -v script >/dev/null || { echo "skipped: no script(1) for a terminal"; exit 77; }
fail=0
numbered_lines 300 "row %d: sing a song of sixpence, a pocket full of rye" >text.txt
"$kiln" train --data text.txt --backend "$backend" --layers 1 --heads 2 --dim 16 --block 16 --batch 2 --steps 2 \
  --eval-every 0 --eval-windows 2 --out run >/dev/null 2>&1 || { echo "FAIL: training"; exit 1; }
# on_terminal WHAT UNIT TOTAL KILN-ARGS...: the command off a terminal draws no bar; on one
# (stderr; stdout to a file) its last "kiln WHAT: N/TOTAL UNIT  ETA" line reaches TOTAL (-:
# a total the test does not know, which the last line must reach), and its stdout is
# byte-identical to the run off the terminal
on_terminal() {
  local what=$1 unit=$2 total=$3 name=$1-${2// /_} line
  shift 3
  "$kiln" "$@" >"$name.plain" 2>"$name.err" || { echo "FAIL: $*: $(cat "$name.err")"; fail=1; return; }
  grep -q $'\033' "$name.err" && { echo "FAIL: $* off a terminal drew a bar: $(od -c "$name.err" | head -3)"; fail=1; }
  script -qec "$(printf '%q ' "$kiln" "$@") >$name.out" /dev/null >"$name.tty" 2>&1 ||
    { echo "FAIL: $* on a terminal: $(tr '\r' '\n' <"$name.tty" | tail -n 2)"; fail=1; }
  line=$(tr '\r' '\n' <"$name.tty" | grep -o "kiln $what: [0-9]*/[0-9]* $unit  ETA [0-9hms]*" | tail -n 1)
  if [ "$total" = - ]; then
    total=${line#kiln "$what": }
    total=${total%%/*}
  fi
  case $line in
    "kiln $what: $total/$total $unit  ETA "*) echo "ok: kiln $* on a terminal shows '$line', the same stdout" ;;
    "") echo "FAIL: $* on a terminal drew no '$unit' line: $(od -c "$name.tty" | head -5)"; fail=1 ;;
    *) echo "FAIL: $* on a terminal: the bar ended at '$line', not $total/$total"; fail=1 ;;
  esac
  cmp -s "$name.plain" "$name.out" || { echo "FAIL: $*: stdout differs on a terminal: $(cat "$name.out")"; fail=1; }
}

# the GPT: 300 lines of 51 bytes, windows of 16 (+1) tokens
windows=$(( ($(wc -c <text.txt) - 1) / 16 ))
on_terminal eval windows "$windows" eval --ckpt run/model.safetensors --data text.txt --backend "$backend" --batch 1

# BERT: windows of --block - 2 tokens
"$kiln" train --model bert --data text.txt --backend "$backend" --layers 1 --heads 2 --dim 16 --block 18 --batch 2 \
  --steps 2 --eval-every 0 --eval-windows 2 --out bert >/dev/null 2>&1 || { echo "FAIL: BERT training"; exit 1; }
windows=$(( ($(wc -c <text.txt) + 15) / 16 ))
on_terminal eval windows "$windows" eval --ckpt bert/model.safetensors --data text.txt --backend "$backend" --batch 1

# seq2seq: the loss pass (a forward per batch) before the translations
awk '{ s = ""; for (i = length($0); i > 0; i--) s = s substr($0, i, 1); print $0 "\t" s }' \
  <(numbered_lines 60 "w%d xyz") >pairs.tsv
"$kiln" train --model seq2seq --data pairs.tsv --backend "$backend" --layers 1 --heads 2 --dim 16 --batch-tokens 64 \
  --steps 2 --eval-every 0 --out s2s >/dev/null 2>&1 || { echo "FAIL: seq2seq training"; exit 1; }
s2s_eval=(eval --ckpt s2s/model.safetensors --data pairs.tsv --backend "$backend" --batch-tokens 64 --max-new 4)
on_terminal eval "batches scored" - "${s2s_eval[@]}"
on_terminal eval "pairs translated" 60 "${s2s_eval[@]}"
exit $fail
