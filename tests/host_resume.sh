#!/usr/bin/env bash
# --resume continues a run bit for bit: 20 uninterrupted steps and 10 steps plus a resumed 10
# end with the same loss, validation loss, gradient norm and weights (dropout on, so the
# saved RNG stream matters; warmup then a flat rate, so the schedule does not depend on
# --steps).
#   host_resume.sh KILN WORKDIR [BACKEND]
set -eu
. "$(dirname "$0")/host_common.sh"
host_setup "$@"
numbered_lines 400 "row %d: sing a song of sixpence, a pocket full of rye" >text.txt
run=(--data text.txt --backend "$backend" --layers 2 --heads 2 --dim 16 --block 16 --batch 3
     --lr 2e-3 --min-lr 2e-3 --warmup 4 --dropout 0.1 --grad-accum 2 --eval-every 5
     --eval-windows 8 --seed 11)
"$kiln" train "${run[@]}" --out whole --steps 20 >whole.out 2>/dev/null
"$kiln" train "${run[@]}" --out split --steps 10 >/dev/null 2>/dev/null
"$kiln" train "${run[@]}" --out split --steps 20 --resume >split.out 2>/dev/null
# the last metrics row without tokens_per_s (a timing)
last() { tail -n 1 "$1/metrics.jsonl" | sed 's/, "tokens_per_s": [^}]*//'; }
echo "uninterrupted: $(last whole) -> $(cat whole.out)"
echo "resumed:       $(last split) -> $(cat split.out)"
status=0
[ "$(last whole)" = "$(last split)" ] || { echo "FAIL: the last metrics differ"; status=1; }
[ "$(cat whole.out)" = "$(cat split.out)" ] || { echo "FAIL: the val loss differs"; status=1; }
[ "$(wc -l <split/metrics.jsonl)" -eq 20 ] || { echo "FAIL: split/metrics.jsonl should hold 20 rows"; status=1; }
cmp whole/model.safetensors split/model.safetensors || { echo "FAIL: the weights differ"; status=1; }
cmp whole/optimizer.safetensors split/optimizer.safetensors || { echo "FAIL: the optimizer states differ"; status=1; }
[ $status -eq 0 ] && echo "ok: resumed run is bit-exact"
exit $status
