#!/usr/bin/env bash
# kiln train into an --out that holds a run, without --resume, is refused unless --force:
# for every model kind (GPT-2's block, the Llama family's, seq2seq, BERT) and for LoRA
# training, the second run exits non-zero with one line naming --out and both ways on, and
# leaves every file of the run as it was (contents and times); --force replaces the run; a
# fresh --out and --resume are not affected; --force and --resume together are refused.
#   host_out_refused.sh KILN WORKDIR [BACKEND]
set -u
. "$(dirname "$0")/host_common.sh"
host_setup "$@"

numbered_lines 200 "row %d: sing a song of sixpence, a pocket full of rye" >text.txt
awk '{ s = ""; for (i = length($0); i > 0; i--) s = s substr($0, i, 1); print $0 "\t" s }' \
  <(numbered_lines 40 "w%d xyz") >pairs.tsv
tiny=(--backend "$backend" --layers 1 --heads 2 --dim 16 --eval-every 0 --warmup 0)
gpt=("${tiny[@]}" --data text.txt --block 16 --batch 2 --eval-windows 2)

# state DIR: every file's name, size, modification time and checksum
state() { (cd "$1" && find . -type f -printf '%p %s %T@\n' | sort && find . -type f -exec md5sum {} + | sort); }

# check KIND ARGS...: ARGS train a run of 2 steps into --out KIND (given in ARGS); again,
# refused; then with --force, replaced
check() {
  local kind=$1 out before
  shift
  set -- "$@" --steps 2
  "$kiln" train "$@" >/dev/null 2>"$kind.first" || { fail "$kind: the first run: $(tail -n 1 "$kind.first")"; return; }
  before=$(state "$kind")
  out=$("$kiln" train "$@" 2>&1 >/dev/null) && { fail "$kind: a second run into its --out was not refused"; return; }
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "$kind: the refusal is not one line: $out"
  printf '%s\n' "$out" | grep -q "^kiln: error: --out $kind holds a run (.*): --resume continues it, --force replaces it$" ||
    fail "$kind: the refusal does not say so: $out"
  [ "$(state "$kind")" = "$before" ] || fail "$kind: the refused run touched its --out"
  "$kiln" train "$@" --force >/dev/null 2>"$kind.forced" || fail "$kind: --force was refused: $(tail -n 1 "$kind.forced")"
  grep -q "will be replaced" "$kind.forced" || fail "$kind: --force did not say that the run is replaced"
  [ $failures -eq 0 ] && echo "ok: $kind: refused ($out), then replaced with --force"
}

check gpt "${gpt[@]}" --out gpt
check llama "${gpt[@]}" --model llama --out llama
check seq2seq "${tiny[@]}" --model seq2seq --data pairs.tsv --batch-tokens 64 --out seq2seq
check bert "${tiny[@]}" --model bert --data text.txt --block 18 --batch 2 --eval-windows 2 --out bert
check lora "${tiny[@]}" --data text.txt --block 16 --batch 2 --eval-windows 2 --init gpt/model.safetensors \
  --lora-rank 2 --out lora

# an --out with other files (no checkpoint) is no run; --resume continues; --force with it is refused
mkdir -p notes && echo "my notes" >notes/README
"$kiln" train "${gpt[@]}" --steps 2 --out notes >/dev/null 2>notes.err || fail "an --out without a run was refused: $(cat notes.err)"
"$kiln" train "${gpt[@]}" --steps 3 --out gpt --resume >/dev/null 2>resume.err || fail "--resume: $(tail -n 1 resume.err)"
out=$("$kiln" train "${gpt[@]}" --steps 3 --out gpt --resume --force 2>&1 >/dev/null) && fail "--force with --resume was not refused"
printf '%s\n' "$out" | grep -q "^kiln: error: --force and --resume exclude each other" || fail "--force --resume: $out"
[ $failures -eq 0 ] && echo "ok: a folder without a run, --resume, and --force with --resume"
[ $failures -eq 0 ]
