#!/usr/bin/env bash
# No tracked file names a folder of one machine: every absolute path in the files git
# tracks lies under a standard root of a Linux or Android system, or is a placeholder.
#   tracked_paths.sh SOURCE_DIR
# An absolute path here is a slash at the start of a word, a first part of two characters
# or more, then at least one more /part: /srv/box/data/x.txt, /home/u/src. Not one:
# a slash after a word, a quote that closes a string or `+ "` (x/y, tokens/s, "$root"/host,
# MACRO "/vocab.json", d + "/metrics.jsonl": paths inside another), after ':' or '/' (URLs),
# or after a regex's characters (s/^a/b/, [/CASE]); a single part (/opencl, /root).
set -u
src=$1

# the standard roots, the conventional missing path (Debian's home of nobody) and the
# placeholder that docs use
allowed='^/(usr|etc|bin|lib|lib64|sbin|tmp|dev|proc|sys|opt|var|home|data/local|nonexistent|path/to)(/|$)'
word='[A-Za-z0-9_.+-]'
path_re="(?<![A-Za-z0-9_.~\$}\])>*<\`:/\\\\^[|?{])(?<![A-Za-z0-9_]\")(?<![A-Z0-9_] \")(?<!\\+ \")(?<![A-Za-z0-9_]-)/[A-Za-z_]$word+(?:/$word+)+"

# scan: FILE:LINE:PATH for each path outside the allowed roots in the files named on stdin
scan() {
  tr '\n' '\0' | xargs -0 grep -I -H -n -o -P "$path_re" 2>/dev/null |
    awk -F: -v allowed="$allowed" '{ p = $0; sub(/^[^:]*:[^:]*:/, "", p); if (p !~ allowed) print }'
}

# The scan itself: it must flag the first lines and none of the others.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/bad" <<'BAD'
data=/srv/devbox/data/corpus.txt
kiln train --data "/shared/input.txt" --out x
FUZZ_OUT=/srv/fuzz-out scripts/fuzz.sh "${LLAMA:-/mnt/peers/llama/x}"
BAD
cat >"$tmp/good" <<'GOOD'
see https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt
data=${DATA:-/usr/share/common-licenses/GPL-3} and /tmp/kiln-x/y.bin, /data/local/tmp/kiln
crash-/leak-/timeout- files, tokens/s per core/thread, a / b, (a)/(b), x = y/z/w;
for f in "$root"/scripts/gpu/*.sh; do sed 's/^/loader /;s/  */ /g'; done
open(d + "/metrics.jsonl"), KILN_TEST_DATA_DIR "/gpt2/vocab.json", --only GROUP[/CASE]
awk '/^static const command/ { n++ }' and /target_link_libraries\(/ and strcat(buf, "/opencl")
KILN_NODE_PEERS=/path/to/peers, --json /nonexistent/dir/x.json, HOME=/root
GOOD
[ "$(echo "$tmp/bad" | scan | wc -l)" -eq 4 ] ||
  { echo "FAIL: the scan misses paths in:"; cat "$tmp/bad"; echo "$tmp/bad" | scan; exit 1; }
[ -z "$(echo "$tmp/good" | scan)" ] || { echo "FAIL: the scan flags:"; echo "$tmp/good" | scan; exit 1; }

cd "$src" || exit 1
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "skipped: $src is not a git checkout"; exit 77; }
# every tracked file but this one, whose examples above are meant to be flagged
files() { git ls-files -- . ':(exclude)tests/tracked_paths.sh'; }
found=$(files | scan)
if [ -n "$found" ]; then
  echo "FAIL: absolute paths outside the standard roots (use a placeholder, an argument or a relative path):"
  echo "$found"
  exit 1
fi
echo "ok: $(files | wc -l) tracked files name no machine's folder"
