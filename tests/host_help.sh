#!/usr/bin/env bash
# `kiln --version` and `kiln --help`: the version line holds CMake's project version and a
# commit (7+ hex digits, or "unknown" outside a git checkout); every command of main.c's
# dispatch tables (commands[], bench_commands[]) is listed by `kiln --help`, and the only
# command without a help line is dev (the developer tools). --help anywhere on a command line
# (after unknown options, missing values, stray words) prints that command's help and exits
# 0, for every command and subcommand; eval's and decode's without a checkpoint list every
# model kind's options.
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

# --help anywhere in the line prints the command's help on stdout and exits 0, whatever
# comes before it: an unknown option, an option missing its value, a stray word.
help_anywhere() { # EXPECTED-USAGE-LINE ARGS...
  local want=$1 out rc
  shift
  for before in "" "--no-such-option" "--no-such-option 3 stray"; do
    # shellcheck disable=SC2086
    out=$("$kiln" "$@" $before --help 2>&1) && rc=0 || rc=$?
    [ "$rc" -eq 0 ] || { fail "kiln $* $before --help: exit $rc: $(printf '%s' "$out" | head -n 1)"; continue; }
    printf '%s\n' "$out" | grep -q "^usage: $want" ||
      fail "kiln $* $before --help: no '$want' usage line: $(printf '%s' "$out" | head -n 1)"
  done
}
while read -r table name listed; do
  [ "$table" = bench_commands ] && help_anywhere "kiln bench $name" bench "$name" && continue
  case $name in
    dev) help_anywhere "kiln dev" dev ;;
    tokenizer) for sub in train import encode decode bench; do help_anywhere "kiln tokenizer $sub" tokenizer "$sub"; done ;;
    pairs) help_anywhere "kiln pairs from-mo" pairs from-mo ;;
    *) help_anywhere "kiln $name" "$name" ;;
  esac
done <<<"$entries"
help_anywhere "kiln train --model seq2seq" train --model seq2seq --steps
help_anywhere "kiln train --model bert" train --dim --model bert
help_anywhere "kiln train " train --model nosuch  # an unknown kind: the default's help, which lists the kinds
help_anywhere "kiln bench train --lora" bench train --lora --rank
help_anywhere "kiln <command>" --no-such-command
# the issue's example: decode's help without a checkpoint holds every kind's options
out=$("$kiln" decode --beam 4 --help) || fail "kiln decode --beam 4 --help: non-zero exit"
printf '%s\n' "$out" | grep -Eq '^  --beam K' || fail "kiln decode --beam 4 --help does not list --beam"
printf '%s\n' "$out" | grep -Eq '^  --prompt TEXT' || fail "kiln decode --beam 4 --help does not list --prompt"
out=$("$kiln" eval --ckpt /nonexistent.safetensors --split --help) || fail "kiln eval ... --split --help: non-zero exit"
for opt in --split --beam --lora; do
  printf '%s\n' "$out" | grep -Eq "^  $opt " || fail "kiln eval --help does not list $opt"
done
[ $failures -eq 0 ] && echo "ok: --help after unknown options, missing values and stray words prints each command's help"
[ $failures -eq 0 ]
