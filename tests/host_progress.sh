#!/usr/bin/env bash
# Progress of long commands on stderr, never on stdout (run/count_progress.h):
#   - kiln eval of a GPT on a terminal draws "kiln eval: N/N windows  ETA ..." in place, and
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
eval_args=(eval --ckpt run/model.safetensors --data text.txt --backend "$backend" --batch 1)
"$kiln" "${eval_args[@]}" >plain.out 2>plain.err || { echo "FAIL: eval: $(cat plain.err)"; exit 1; }
grep -q $'\033' plain.err && { echo "FAIL: eval off a terminal drew a bar: $(od -c plain.err | head -3)"; fail=1; }
# stderr on the terminal, stdout to a file
script -qec "$(printf '%q ' "$kiln" "${eval_args[@]}") >tty.out" /dev/null >tty.err 2>&1 ||
  { echo "FAIL: eval on a terminal: $(tr '\r' '\n' <tty.err | tail -n 2)"; fail=1; }
windows=$(tr '\r' '\n' <tty.err | grep -o 'kiln eval: [0-9]*/[0-9]* windows  ETA [0-9hms]*' | tail -n 1)
case $windows in
  "kiln eval: "*/*" windows  ETA "*)
    done_total=${windows#kiln eval: }; done_total=${done_total%% *}
    [ "${done_total%/*}" = "${done_total#*/}" ] || { echo "FAIL: the bar ended at $done_total"; fail=1; } ;;
  *) echo "FAIL: eval on a terminal drew no progress line: $(od -c tty.err | head -5)"; fail=1 ;;
esac
cmp -s plain.out tty.out || { echo "FAIL: eval's stdout differs on a terminal: $(cat tty.out)"; fail=1; }
[ $fail -eq 0 ] && echo "ok: eval on a terminal shows '$windows', the same stdout ($(cat plain.out))"
exit $fail
