# What the host test scripts (host_*.sh) share; each sources it first:
#   . "$(dirname "$0")/host_common.sh"

# host_workdir WORKDIR: a fresh, empty WORKDIR, made the current directory.
host_workdir() {
  rm -rf "$1" && mkdir -p "$1" && cd "$1"
}

# fail WHAT...: one failed check, printed and counted in $failures (a script that uses it
# ends with `[ $failures -eq 0 ]`; scripts that stop at the first failure define their own).
failures=0
fail() {
  echo "FAIL $*"
  failures=$((failures + 1))
}

# expect_one_line_error WHAT WANT ARGS...: kiln ARGS fails, its stderr is one line
# "kiln: error: ..." containing WANT
expect_one_line_error() {
  local what=$1 want=$2
  shift 2
  if "$kiln" "$@" >out.txt 2>err.txt; then fail "$what: succeeded"; return; fi
  local lines
  lines=$(wc -l <err.txt)
  [ "$lines" -eq 1 ] || fail "$what: $lines lines on stderr: $(cat err.txt)"
  grep -q "^kiln: error: .*$want" err.txt || fail "$what: stderr '$(cat err.txt)' lacks '$want'"
  echo "ok: $what -> $(cat err.txt)"
}

# host_setup KILN WORKDIR [BACKEND]: sets kiln, work and backend (cpu when not given), exits
# 77 (skipped) when this machine has no device of that backend (`kiln info` lists "NAME:N"),
# and starts in a fresh WORKDIR.
host_setup() {
  kiln=$1
  work=$2
  backend=${3:-cpu}
  "$kiln" info 2>/dev/null | grep -q "^$backend:[0-9]" || { echo "skipped: no $backend device"; exit 77; }
  host_workdir "$work"
}

# numbered_lines COUNT TEXT: COUNT lines of training text, the i-th one "TEXT" with its %d
# replaced by i.
numbered_lines() {
  local i
  for i in $(seq 1 "$1"); do printf "$2\n" "$i"; done
}

# A python that can write bytes (any python3 will do: struct and json only).
py=python3
command -v "$py" >/dev/null || py=/usr/bin/python3

# expect_kiln_refused WHAT EXPECTED-TEXT KILN-ARGS...: `$kiln KILN-ARGS` must fail with one
# line holding EXPECTED-TEXT; prints ok or FAIL, and sets the script's `fail=1` on a failure
# (host_bert.sh, host_seq2seq.sh).
expect_kiln_refused() {
  local what=$1 want=$2
  shift 2
  if "$kiln" "$@" >/dev/null 2>err.txt; then
    echo "FAIL: $what was accepted"; fail=1
  elif [ "$(wc -l <err.txt)" -ne 1 ] || ! grep -q -- "$want" err.txt; then
    echo "FAIL: $what: expected one line with '$want', got:"; cat err.txt; fail=1
  else
    echo "ok: $what: $(cat err.txt)"
  fi
}

# expect_exact_resume TRAIN-ARGS...: `kiln train` for 20 steps at once (into whole/) and for
# 10 steps plus a resumed 10 (into split/) must end with the same last metrics row (but for
# tokens_per_s, a timing, and the memory figures), validation loss, weights and optimizer state. Prints both runs'
# last rows and a FAIL line for each difference; returns 1 if there is any. A run that fails
# ends the script with its exit code (as `set -e` would, which a function called in a
# condition does not have).
expect_exact_resume() {
  "$kiln" train "$@" --out whole --steps 20 >whole.out 2>/dev/null || exit
  "$kiln" train "$@" --out split --steps 10 >/dev/null 2>/dev/null || exit
  "$kiln" train "$@" --out split --steps 20 --resume >split.out 2>/dev/null || exit
  local last_whole last_split differs=0
  local unmeasured='s/, "\(tokens_per_s\|host_rss_bytes\|device_bytes\)": [^,}]*//g'
  last_whole=$(tail -n 1 whole/metrics.jsonl | sed "$unmeasured")
  last_split=$(tail -n 1 split/metrics.jsonl | sed "$unmeasured")
  echo "uninterrupted: $last_whole -> $(cat whole.out)"
  echo "resumed:       $last_split -> $(cat split.out)"
  [ "$last_whole" = "$last_split" ] || { echo "FAIL: the last metrics differ"; differs=1; }
  [ "$(cat whole.out)" = "$(cat split.out)" ] || { echo "FAIL: the val loss differs"; differs=1; }
  [ "$(wc -l <split/metrics.jsonl)" -eq 20 ] || { echo "FAIL: split/metrics.jsonl should hold 20 rows"; differs=1; }
  cmp whole/model.safetensors split/model.safetensors || { echo "FAIL: the weights differ"; differs=1; }
  cmp whole/optimizer.safetensors split/optimizer.safetensors ||
    { echo "FAIL: the optimizer states differ"; differs=1; }
  return $differs
}

# expect_resume_keeps_batch OPTION TRAIN-ARGS...: after expect_exact_resume with the same
# TRAIN-ARGS (which give OPTION, the batch, once): 10 steps, then a resume without OPTION,
# must end with the uninterrupted run's weights (the batch comes from the run), and a resume
# with another batch must be refused with a line naming both. Returns 1 on a failure.
expect_resume_keeps_batch() {
  local option=$1 value="" rest=() said
  shift
  while [ $# -gt 0 ]; do
    if [ "$1" = "$option" ]; then value=$2; shift 2; else rest+=("$1"); shift; fi
  done
  "$kiln" train "${rest[@]}" "$option" "$value" --out nobatch --steps 10 >/dev/null 2>&1 || exit
  "$kiln" train "${rest[@]}" --out nobatch --steps 20 --resume >/dev/null 2>nobatch.err ||
    { echo "FAIL: --resume without $option: $(cat nobatch.err)"; return 1; }
  cmp -s whole/model.safetensors nobatch/model.safetensors ||
    { echo "FAIL: --resume without $option: the weights differ from the uninterrupted run's"; return 1; }
  if said=$("$kiln" train "${rest[@]}" "$option" $((value + 1)) --out nobatch --steps 30 --resume 2>&1 >/dev/null); then
    echo "FAIL: --resume with $option $((value + 1)) (the run's is $value) was not refused"; return 1
  fi
  case $said in
    *"the batch is $((value + 1)) here but $value"*) ;;
    *) echo "FAIL: --resume with $option $((value + 1)) said: $said"; return 1 ;;
  esac
  echo "ok: --resume takes $option $value from the run, and refuses $option $((value + 1))"
}

# expect_cache_agrees CKPT WHAT DECODE-ARGS...: `kiln decode` of CKPT on $backend prints the
# same text with the KV cache as without it (--no-cache); prints ok, or counts a fail.
expect_cache_agrees() {
  local ckpt=$1 what=$2 with without
  shift 2
  with=$("$kiln" decode --ckpt "$ckpt" --backend "$backend" "$@" 2>/dev/null)
  without=$("$kiln" decode --ckpt "$ckpt" --backend "$backend" --no-cache "$@" 2>/dev/null)
  if [ -n "$with" ] && [ "$with" = "$without" ]; then
    echo "ok   $what: $(printf '%s' "$with" | head -c 60 | tr '\n' '|')"
  else
    fail "$what:"
    echo "  with the cache:    $(printf '%s' "$with" | tr '\n' '|')"
    echo "  without the cache: $(printf '%s' "$without" | tr '\n' '|')"
  fi
}
