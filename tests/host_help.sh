#!/usr/bin/env bash
# `kiln --version` and `kiln --help`: the version line holds CMake's project version and a
# commit (7+ hex digits, or "unknown" outside a git checkout); every command of main.c's
# dispatch tables (commands[], bench_commands[]) is listed by `kiln --help`, and the only
# command without a help line is dev (the developer tools).
#   host_help.sh KILN MAIN_C PROJECT_VERSION
set -u
. "$(dirname "$0")/host_common.sh"
kiln=$1 main_c=$2 project_version=$3

for args in --version version; do
  line=$("$kiln" $args) || fail "kiln $args: non-zero exit"
  [ "$(printf '%s\n' "$line" | wc -l)" -eq 1 ] || fail "kiln $args: not one line: $line"
  version_re=$(printf '%s' "$project_version" | sed 's/\./\\./g')
  printf '%s\n' "$line" | grep -Eq "^kiln $version_re \(commit ([0-9a-f]{7,}|unknown)\)$" ||
    fail "kiln $args: '$line' lacks version $project_version and a commit"
  echo "ok: kiln $args -> $line"
done

help=$("$kiln" --help) || fail "kiln --help: non-zero exit"
# each table entry: TABLE NAME HAS_SUMMARY, read from the source the dispatch runs on
entries=$(awk '
  function flush() { if (name != "") print table, name, listed; name = "" }
  /^static const command [a-z_]+\[\] = \{/ { table = $4; sub(/\[\].*/, "", table); next }
  table && /^\};/ { flush(); table = "" }
  table && match($0, /\.name = "[^"]+"/) { flush(); name = substr($0, RSTART + 9, RLENGTH - 10); listed = 0 }
  table && /\.summary = / { listed = 1 }' "$main_c")
[ "$(printf '%s\n' "$entries" | grep -c '^commands ')" -ge 10 ] || fail "found too few commands in $main_c: $entries"
[ "$(printf '%s\n' "$entries" | grep -c '^bench_commands ')" -ge 5 ] || fail "found too few bench commands in $main_c"
while read -r table name listed; do
  prefix=""
  [ "$table" = bench_commands ] && prefix="bench "
  if [ "$listed" -eq 0 ]; then
    [ "$table$name" = commandsdev ] || fail "kiln $prefix$name has no help line"
    continue
  fi
  printf '%s\n' "$help" | grep -Eq "^  $prefix$name +[^ ]" || fail "kiln --help does not list '$prefix$name'"
done <<<"$entries"
[ $failures -eq 0 ] && echo "ok: kiln --help lists all $(printf '%s\n' "$entries" | wc -l) table entries but dev"
[ $failures -eq 0 ]
