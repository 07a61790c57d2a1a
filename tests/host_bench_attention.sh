#!/usr/bin/env bash
# `kiln bench attention` briefly on the cpu: a row per length; the fused path's peak memory
# grows linearly (doubling T doubles it, within 10%) and stays below the unfused path's; the
# unfused path "does not fit" below a KILN_MEMORY_LIMIT that holds its inputs but not its
# scores, while the fused one still runs; bad --lengths give one line. Never a speed.
#   host_bench_attention.sh KILN WORKDIR
set -u
. "$(dirname "$0")/host_common.sh"
host_setup "$1" "$2" cpu

"$kiln" bench attention --lengths 256,512 --heads 2 --head-dim 32 --repeats 1 >out.txt 2>err.txt ||
  fail "bench attention: $(cat err.txt)"
cat out.txt
python3 - out.txt <<'PYEOF' || fail "the figures"
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.split() and l.split()[0].isdigit()]
assert [r[0] for r in rows] == ["256", "512"], rows
fused = [float(r[1]) for r in rows]
unfused = [float(r[3]) for r in rows]
assert 1.8 <= fused[1] / fused[0] <= 2.2, fused   # linear in T
assert all(f < u for f, u in zip(fused, unfused)), (fused, unfused)
PYEOF

# 1 MiB holds q, k, v and their gradients at T = 256 (0.2 MiB) but not 5 of [2, 256, 256] f32
KILN_MEMORY_LIMIT=1048576 "$kiln" bench attention --lengths 256 --heads 2 --head-dim 16 --repeats 1 \
  >limited.txt 2>err.txt || fail "bench attention under KILN_MEMORY_LIMIT: $(cat err.txt)"
cat limited.txt
grep -Eq '^ +256 +[0-9.]+ +[0-9.]+ +does not fit \(needs [0-9.]+ (KiB|MiB)\)' limited.txt ||
  fail "the unfused path does not say it does not fit"

expect_one_line_error "bad --lengths" "--lengths 128,x" bench attention --lengths 128,x
expect_one_line_error "zero length" "--lengths 0" bench attention --lengths 0
[ "$failures" -eq 0 ]
