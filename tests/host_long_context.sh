#!/usr/bin/env bash
# Long context on the CPU backend, with the default --attention (auto: fused): `kiln train
# --block 8192 --steps 2` of 4 layers, dim 256, 4 heads, batch 1, bytes, f32 peaks under
# 4 GiB of resident memory (the unfused path needs 5 GiB of scores per layer there: one
# [4, 8192, 8192] f32 tensor is 1 GiB), and the same run at --block 2048 peaks at no less than
# a quarter of that, so memory grows linearly in the context. Peak RSS is the child's
# ru_maxrss (getrusage), read by python3. About 90 s on 2 cores.
#   host_long_context.sh KILN WORKDIR
set -u
. "$(dirname "$0")/host_common.sh"
host_setup "$1" "$2" cpu

# 84 KB of bytes: the held-out tenth holds one window of 8192
numbered_lines 1500 "line %d: sing a song of sixpence, a pocket full of rye" >long.txt

# peak_rss BLOCK: kiln train at --block BLOCK; prints its peak resident set in bytes
peak_rss() {
  python3 - "$kiln" "$1" <<'EOF'
import resource, subprocess, sys
kiln, block = sys.argv[1], sys.argv[2]
cmd = [kiln, "train", "--data", "long.txt", "--out", f"run{block}", "--layers", "4", "--dim", "256",
       "--heads", "4", "--batch", "1", "--block", block, "--steps", "2", "--backend", "cpu"]
r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
sys.stderr.write(r.stderr)
if r.returncode != 0:
    sys.exit(1)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
EOF
}

long=$(peak_rss 8192 2>long.err) || fail "--block 8192: $(tail -3 long.err)"
short=$(peak_rss 2048 2>short.err) || fail "--block 2048: $(tail -3 short.err)"
[ "$failures" -eq 0 ] || exit 1
echo "peak RSS: --block 8192 $((long >> 20)) MiB, --block 2048 $((short >> 20)) MiB"
[ "$long" -lt $((4 << 30)) ] || fail "--block 8192 peaked at $((long >> 20)) MiB, not under 4 GiB"
[ $((short * 4)) -ge "$long" ] || fail "--block 2048 peaked at $((short >> 20)) MiB, under a quarter of 8192's: not linear"
[ "$failures" -eq 0 ]
