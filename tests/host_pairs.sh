#!/usr/bin/env bash
# `kiln pairs from-mo`: bad inputs end in one line and a non-zero exit (a file that is not a
# catalog, a truncated catalog, a missing file, no --out, an --out that is a file); a run on
# two real German catalogs of this machine (skipped when it has none) writes three TSVs whose
# pairs are all msgid/msgstr pairs of those catalogs as Python's struct reads them, whose
# counts add up, and which do not depend on the order the files are given in.
#   host_pairs.sh KILN WORKDIR
set -eu
. "$(dirname "$0")/host_common.sh"
kiln=$1
host_workdir "$2"
status=0
fail() { echo "FAIL: $*"; status=1; }

expect_error() {
  local want=$1; shift
  if "$kiln" pairs "$@" >out.txt 2>err.txt; then fail "accepted: $*"; return; fi
  [ "$(wc -l <err.txt)" -eq 1 ] || fail "more than one line for $*: $(cat err.txt)"
  grep -q -- "$want" err.txt || fail "for $* expected '$want', got: $(cat err.txt)"
}
printf 'msgid "Open file"\nmsgstr "Datei oeffnen"\n' >text.mo  # a .po text, not a compiled catalog
expect_error "text.mo: not a GNU .mo file" from-mo --out o text.mo
printf 'tiny' >short.mo
expect_error "short.mo: 4 bytes are too few" from-mo --out o short.mo
# a catalog cut after its header and tables: the strings lie past the end
$py - <<'PY'
import struct
strings = [(b"", b"Content-Type: text/plain; charset=UTF-8\n"), (b"Open", b"\xc3\x96ffnen")]
n, o = len(strings), 28
t = o + 8 * n
pos, table_o, table_t, blob = t + 8 * n, b"", b"", b""
for a, b in strings:
    table_o += struct.pack("<II", len(a), pos + len(blob)); blob += a + b"\0"
for a, b in strings:
    table_t += struct.pack("<II", len(b), pos + len(blob)); blob += b + b"\0"
data = struct.pack("<7I", 0x950412de, 0, n, o, t, 0, 0) + table_o + table_t + blob
open("good.mo", "wb").write(data)
open("truncated.mo", "wb").write(data[:pos + 10])
PY
expect_error "truncated.mo: translation 0 (offset" from-mo --out o truncated.mo
expect_error "missing.mo: cannot open" from-mo --out o missing.mo
expect_error "needs --out DIR" from-mo good.mo
: >afile
expect_error "exists and is not a directory" from-mo --out afile good.mo
expect_error "expected from-mo" to-mo good.mo
[ ! -e o ] || [ -z "$(ls -A o)" ] || fail "a failed run left files in o/"
"$kiln" pairs from-mo --out tiny good.mo >tiny.txt 2>/dev/null || fail "good.mo was refused"
grep -q "^kept 1$" tiny.txt || fail "good.mo should give one pair: $(cat tiny.txt)"
[ "$(cat tiny/*.tsv)" = "$(printf 'Open\t\303\226ffnen')" ] || fail "good.mo's pair: $(cat tiny/*.tsv)"

# two real catalogs: the first two regular files of 20 KB or more, in sorted order
dir=/usr/share/locale/de/LC_MESSAGES
mapfile -t real < <(find "$dir" -maxdepth 1 -type f -name '*.mo' -size +20k 2>/dev/null | LC_ALL=C sort | head -n 2)
if [ "${#real[@]}" -lt 2 ]; then
  echo "real catalogs: skipped (fewer than two German catalogs of 20 KB+ in $dir)"
else
  "$kiln" pairs from-mo --out a "${real[@]}" >a.txt 2>a.err || fail "from-mo on ${real[*]}: $(cat a.err)"
  "$kiln" pairs from-mo --out b "${real[1]}" "${real[0]}" >b.txt 2>/dev/null || fail "reversed order failed"
  for s in train valid test; do cmp -s "a/$s.tsv" "b/$s.tsv" || fail "$s.tsv depends on the order of the files"; done
  ls -A a | grep -q tmp && fail "a temporary file was left in a/"
  echo "${real[*]}:"; cat a.txt
  $py - a.txt "${real[@]}" <<'PY' || status=1
import struct, sys
counts = dict(line.rsplit(" ", 1) if not line.split()[0] in ("train", "valid", "test") else (line.split()[0], line.split()[1])
              for line in open(sys.argv[1]).read().splitlines())
catalog = set()
for path in sys.argv[2:]:
    b = open(path, "rb").read()
    e = "<" if struct.unpack("<I", b[:4])[0] == 0x950412de else ">"
    n, o, t = struct.unpack(e + "3I", b[8:20])
    for i in range(n):
        lo, oo = struct.unpack(e + "2I", b[o + 8 * i:o + 8 * i + 8])
        lt, ot = struct.unpack(e + "2I", b[t + 8 * i:t + 8 * i + 8])
        mid, mstr = b[oo:oo + lo].split(b"\x04")[-1].strip(b"\n"), b[ot:ot + lt].strip(b"\n")
        catalog.add((mid, mstr))
        if mid.count(b"_") >= 1 and mstr.count(b"_") >= 1:  # GTK mnemonics removed from both sides
            catalog.add((mid.replace(b"_", b"", 1), mstr.replace(b"_", b"", 1)))
bad, sources, total = 0, set(), 0
for split in ("train", "valid", "test"):
    lines = open(f"a/{split}.tsv", "rb").read().split(b"\n")
    assert lines[-1] == b"", f"{split}.tsv does not end with a newline"
    lines = lines[:-1]
    assert len(lines) == int(counts[split]), (split, len(lines), counts[split])
    for line in lines:
        src, tgt = line.split(b"\t")  # exactly one tab
        assert src and tgt, line
        if (src, tgt) not in catalog:
            bad += 1
            if bad < 5: print("FAIL: not a pair of the catalogs:", line)
        assert src not in sources, f"duplicate source {src!r}"
        sources.add(src)
        total += 1
kept = int(counts["kept"])
dropped = sum(int(v) for k, v in counts.items() if k.startswith("dropped"))
assert total == kept, (total, kept)
assert kept + dropped == int(counts["entries"]), (kept, dropped, counts["entries"])
assert kept > 0
if bad: sys.exit(1)
print(f"ok: {kept} pairs, each a msgid/msgstr pair of the catalogs, counts add up")
PY
fi
[ $status -eq 0 ] && echo "ok: kiln pairs from-mo"
exit $status
