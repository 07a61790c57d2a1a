#!/usr/bin/env bash
# `kiln plot`: runs overlaid as an SVG that a real renderer (rsvg-convert) draws as a picture
# that is not empty (many non-white pixels, several colours); a diverged run still renders;
# the legend tells apart runs in folders of the same name, or names them by --label; equal
# curves keep their markers; a layer profile names its step; log axes are labelled at both
# ends; a malformed line is reported with its file and line number; bad arguments fail in
# one line.
#   host_plot.sh KILN WORKDIR
set -eu
. "$(dirname "$0")/host_common.sh"
kiln=$1
host_workdir "$2"
command -v rsvg-convert >/dev/null || { echo "skipped: no rsvg-convert (apt-get install librsvg2-bin)"; exit 77; }
status=0
fail() { echo "FAIL: $*"; status=1; }

# three runs: one healthy, one that diverges, one with the monitoring lists
mkdir -p runs/healthy runs/diverged runs/monitored
$py - <<'PY'
import json, math
def rows(path, f):
    with open(path, "w") as out:
        for s in range(1, 61):
            out.write(json.dumps(f(s)) + "\n")
rows("runs/healthy/metrics.jsonl", lambda s: dict(step=s, loss=4 * math.exp(-s / 20) + 1.5, lr=1e-3 * min(1, s / 10),
     grad_norm=1 / s, **({"val_loss": 4 * math.exp(-s / 20) + 1.6} if s % 10 == 0 else {})))
rows("runs/diverged/metrics.jsonl", lambda s: dict(step=s, loss=(2 + s / 10 if s < 40 else 1e9 if s < 50 else None),
     lr=3e-3, grad_norm=(10.0 ** (s / 6) if s < 50 else None)))
rows("runs/monitored/metrics.jsonl", lambda s: dict(step=s, loss=3 - s / 60, lr=1e-3, grad_norm=0.5,
     **({"val_loss": 3.1 - s / 60, "attn_entropy": [2.0 - s / 40, None, 1.5], "attn_entropy_min": 1.4 - s / 50,
         "grad_norm_layers": [0.1 * (l + 1) for l in range(6)]} if s % 15 == 0 else {})))
PY

# picture_ok SVG: the rendered PNG has over 3% non-white pixels and more than 3 colours
picture_ok() {
  rsvg-convert "$1" -o "$1.png" || return 1
  $py - "$1.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and ctype in (2, 6), (depth, ctype)
        bpp = 4 if ctype == 6 else 3
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
ink, colours = 0, set()
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        px = tuple(line[x:x + 3])
        if px != (255, 255, 255):
            ink += 1
        colours.add(px)
    prev = line
share = ink / (w * h)
print(f"{w}x{h}: {share:.1%} ink, {len(colours)} colours")
assert share > 0.03 and len(colours) > 3, "the picture is empty"
PY
}

"$kiln" plot runs/healthy runs/diverged runs/monitored/metrics.jsonl -o all.svg \
  --metric loss,val_loss,lr,grad_norm,attn_entropy >out.txt 2>err.txt || fail "plot failed: $(cat err.txt)"
picture_ok all.svg || fail "all.svg does not render as a picture"
grep -q "log scale" all.svg || fail "grad_norm spans decades but has no log scale"
grep -q "diverged" all.svg || fail "the diverged run is not marked"
for run in healthy diverged monitored; do grep -q ">$run<" all.svg || fail "the legend lacks $run"; done
"$kiln" plot runs/monitored -o layers.svg --metric grad_norm_layers --at-step 30 2>err.txt || fail "layers: $(cat err.txt)"
picture_ok layers.svg || fail "layers.svg does not render as a picture"
grep -q ">grad_norm_layers at step 30<" layers.svg || fail "the layer panel does not name its step"

# labels: two runs in folders both named model are told apart by the folder above; --label
# names runs in order, the rest keep their default; equal curves both show their markers
mkdir -p a/model b/model c/deep/model
for d in a/model b/model; do cp runs/healthy/metrics.jsonl $d/; done
cp runs/monitored/metrics.jsonl c/deep/model/
"$kiln" plot a/model b/model runs/healthy -o same.svg 2>err.txt || fail "same: $(cat err.txt)"
for want in a/model b/model healthy; do grep -q ">$want<" same.svg || fail "the legend lacks $want"; done
picture_ok same.svg || fail "same.svg does not render as a picture"
# each run's marker shape (circle, square, triangle) is drawn on its line, though the lines coincide
for shape in "<circle cx" "<rect x=\"[0-9.]*\" y=\"[0-9.]*\" width=\"8\"" "<path d=\"M[0-9.,]* l5,9"; do
  [ "$(grep -c "$shape" same.svg)" -gt 6 ] || fail "equal curves: too few markers '$shape' in same.svg"
done
"$kiln" plot a/model b/model c/deep/model --label first -o labels.svg 2>err.txt || fail "labels: $(cat err.txt)"
for want in first b/model deep/model; do grep -q ">$want<" labels.svg || fail "the legend lacks $want"; done
grep -q ">a/model<" labels.svg && fail "--label first did not name the first run"

# a log axis is labelled above and below its values: gradient norms from 0.012 to 1.5 (tick
# labels 0.01, 0.02, 0.05 ... 2), and from 2e-4 to 3 (powers of ten, 0.0001 ... 10)
mkdir -p runs/decades
$py - <<'PY'
import json
with open("runs/decades/metrics.jsonl", "w") as f:
    f.write(json.dumps(dict(step=1, loss=3.0, grad_norm_layers=[1.5, 0.012, 0.05, 0.04])) + "\n")
    f.write(json.dumps(dict(step=2, loss=3.0, grad_norm_layers=[3.0, 2e-4, 5e-4, 1e-3])) + "\n")
PY
"$kiln" plot runs/decades -o narrow.svg --metric grad_norm_layers --at-step 1 2>err.txt || fail "narrow: $(cat err.txt)"
for want in 0.01 0.02 0.05 0.1 0.2 0.5 1 2; do grep -q "\">$want</text>" narrow.svg || fail "narrow log axis: no tick $want"; done
"$kiln" plot runs/decades -o wide.svg --metric grad_norm_layers --at-step 2 2>err.txt || fail "wide: $(cat err.txt)"
for want in 0.0001 0.001 0.01 0.1 1 10; do grep -q "\">$want</text>" wide.svg || fail "wide log axis: no tick $want"; done
grep -q "log scale" wide.svg || fail "wide.svg is not on a log scale"

# errors: one line, non-zero, the file and line of a malformed row
expect_error() {
  local want=$1; shift
  if "$kiln" plot "$@" >out.txt 2>err.txt; then fail "accepted: $*"; return; fi
  [ "$(wc -l <err.txt)" -eq 1 ] || fail "more than one line for $*: $(cat err.txt)"
  grep -q -- "$want" err.txt || fail "for $* expected '$want', got: $(cat err.txt)"
}
mkdir -p runs/broken
head -n 2 runs/healthy/metrics.jsonl >runs/broken/metrics.jsonl
echo '{"step": 3, "loss": 2.0' >>runs/broken/metrics.jsonl
expect_error "runs/broken/metrics.jsonl:3:" runs/broken -o x.svg
echo '[1, 2]' >bad.jsonl
expect_error "bad.jsonl:1: not a metrics row" bad.jsonl -o x.svg
expect_error "--metric perplexity is not one kiln logs" runs/healthy -o x.svg --metric loss,perplexity
expect_error "nowhere: cannot open" nowhere -o x.svg
expect_error "needs -o FILE.svg" runs/healthy
expect_error "no run has attn_entropy" runs/healthy -o x.svg --metric attn_entropy
expect_error "--label is given 2 times for 1 run" runs/healthy -o x.svg --label one --label two
[ ! -e x.svg ] || fail "a failed plot left x.svg"
[ $status -eq 0 ] && echo "ok: kiln plot renders and refuses bad input"
exit $status
