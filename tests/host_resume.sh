#!/usr/bin/env bash
# --resume continues a run bit for bit: 20 uninterrupted steps and 10 steps plus a resumed 10
# end with the same loss, validation loss, gradient norm and weights (dropout on, so the
# saved RNG stream matters; warmup then a flat rate, so the schedule does not depend on
# --steps). The resumed half may leave --batch out: it comes from the run.
#   host_resume.sh KILN WORKDIR [BACKEND]
set -eu
. "$(dirname "$0")/host_common.sh"
host_setup "$@"
numbered_lines 400 "row %d: sing a song of sixpence, a pocket full of rye" >text.txt
run=(--data text.txt --backend "$backend" --layers 2 --heads 2 --dim 16 --block 16 --batch 3
     --lr 2e-3 --min-lr 2e-3 --warmup 4 --dropout 0.1 --grad-accum 2 --eval-every 5
     --eval-windows 8 --seed 11)
status=0
expect_exact_resume "${run[@]}" || status=1
expect_resume_keeps_batch --batch "${run[@]}" || status=1
[ $status -eq 0 ] && echo "ok: resumed run is bit-exact"
exit $status
