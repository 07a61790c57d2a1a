#!/usr/bin/env bash
# The faults a long training run meets. Each must end with one clear line ("kiln: error:
# ..."), a non-zero exit (not a signal), and the last good checkpoint intact: it loads, and
# --resume from it ends with exactly the weights and optimizer state of a run that never
# failed (bit for bit: the training state makes runs reproducible).
#   - SIGTERM (batch schedulers, `timeout`, container runtimes): the run saves at the current
#     step and says where the checkpoint is;
#   - a file-size limit hit while a checkpoint is written (ulimit -f: SIGXFSZ is ignored, the
#     write fails with EFBIG): the previous checkpoint survives, no partial file is left;
#   - SIGKILL between the two files of a checkpoint: the previous optimizer state resumes,
#     and the next checkpoint keeps it, not the state that was ahead;
#   - SIGKILL at random moments of a run that checkpoints every step, many times over: every
#     checkpoint on disk loads and resumes, and the run ends as an uninterrupted one;
#   - a device lost mid-step, and a device allocation that fails (KILN_FAULT, core/fault.h);
#   - refused before any step: an output directory that cannot be made, a truncated
#     checkpoint to resume, another model's checkpoint, an optimizer state from another run.
# The device faults run on every backend; the rest, the program's own, on cpu.
#   host_faults.sh KILN WORKDIR [BACKEND]
# KILN_TEST_QUICK=1 (the sanitizer build in .ci/run) kills a 100-step run 4 times instead of
# a 400-step run 12 times.
set -u
. "$(dirname "$0")/host_common.sh"
host_setup "$@"
quick=${KILN_TEST_QUICK:-0}

numbered_lines 300 "row %d: sing a song of sixpence, a pocket full of rye" >text.txt
# a constant rate after warmup, so that --steps does not change the schedule; --trust-device:
# no first-use device check, whose kernel calls would shift KILN_FAULT's counts
# (--eval-every and --seed are given by each command: an option may appear once)
run=(--data text.txt --backend "$backend" --trust-device --layers 2 --heads 2 --dim 16 --block 16 --batch 3
     --lr 2e-3 --min-lr 2e-3 --warmup 4 --dropout 0.1 --eval-windows 8)
every5=(--eval-every 5 --seed 11)

# step_of FILE: the "step" in a checkpoint file's metadata.
step_of() {
  "$py" -c 'import json, struct, sys
f = open(sys.argv[1], "rb")
n = struct.unpack("<Q", f.read(8))[0]
print(json.loads(f.read(n))["__metadata__"]["step"])' "$1" 2>/dev/null || echo none
}

# expect_failure WHAT PATTERN: the last command's exit status is in $rc and its stderr in
# err.txt; it must have failed (not by a signal) with one "kiln: error:" line matching
# PATTERN as its last line.
expect_failure() {
  local what=$1 pattern=$2 errors
  errors=$(grep -c '^kiln: error: ' err.txt)
  if [ "$rc" -eq 0 ] || [ "$rc" -ge 128 ] || [ "$errors" -ne 1 ] || ! tail -n 1 err.txt | grep -q "^kiln: error: .*$pattern"; then
    fail "$what: exit $rc, stderr:"
    sed 's/^/    /' err.txt | tail -n 5
  else
    echo "ok   $what: $(tail -n 1 err.txt)"
  fi
}

# expect_same DIR REF WHAT: DIR's checkpoint equals REF's, bit for bit.
expect_same() {
  if cmp -s "$1/model.safetensors" "$2/model.safetensors" && cmp -s "$1/optimizer.safetensors" "$2/optimizer.safetensors"; then
    echo "ok   $3: the weights and optimizer state equal the uninterrupted run's"
  else
    fail "$3: the checkpoint differs from the uninterrupted run's"
  fi
}

# expect_loads DIR WHAT: DIR's model evaluates.
expect_loads() {
  if "$kiln" eval --ckpt "$1/model.safetensors" --data text.txt --backend "$backend" >/dev/null 2>eval_err.txt; then
    echo "ok   $2: $1/model.safetensors (step $(step_of "$1/model.safetensors")) loads"
  else
    fail "$2: $1/model.safetensors does not load: $(cat eval_err.txt)"
  fi
}

# expect_no_temporaries DIR WHAT
expect_no_temporaries() {
  local left
  left=$(find "$1" -name '*.tmp.*' | head -n 3)
  [ -z "$left" ] || fail "$2: temporary files left: $left"
}

"$kiln" train "${run[@]}" "${every5[@]}" --out ref10 --steps 10 >/dev/null 2>&1 || { echo "FAIL: the reference run"; exit 1; }
"$kiln" train "${run[@]}" "${every5[@]}" --out ref20 --steps 20 >/dev/null 2>&1 || { echo "FAIL: the reference run"; exit 1; }

signal_and_disk_faults() {
  # ---- SIGTERM: save at the current step, say where, resume ----
  "$kiln" train "${run[@]}" "${every5[@]}" --out term --steps 1000000 --log-every 1 >/dev/null 2>err.txt &
  pid=$!
  for _ in $(seq 1 600); do # until 7 steps are logged (30 s at most)
    [ "$(cat term/metrics.jsonl 2>/dev/null | wc -l)" -ge 7 ] && break
    sleep 0.05
  done
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  expect_failure "SIGTERM" "interrupted (SIGTERM) at step [0-9]*; the checkpoint in term resumes with --resume"
  saved=$(tail -n 1 err.txt | sed -n 's/.*at step \([0-9]*\);.*/\1/p')
  [ -n "$saved" ] && [ "$(step_of term/model.safetensors)" = "$saved" ] ||
    fail "SIGTERM: the checkpoint holds step $(step_of term/model.safetensors), the message says ${saved:-nothing}"
  "$kiln" train "${run[@]}" "${every5[@]}" --out term --steps $((saved + 2)) --resume >/dev/null 2>err.txt ||
    fail "SIGTERM: --resume after it: $(tail -n 1 err.txt)"

  # ---- a file-size limit while a checkpoint is written ----
  cp -r ref10 fsize
  cp ref10/model.safetensors model10.safetensors
  cp ref10/optimizer.safetensors optimizer10.safetensors
  limit_kb=$(($(stat -c %s model10.safetensors) / 1024 / 2))
  (ulimit -f "$limit_kb" && exec "$kiln" train "${run[@]}" "${every5[@]}" --out fsize --steps 20 --resume) >/dev/null 2>err.txt
  rc=$?
  expect_failure "file-size limit (ulimit -f $limit_kb) during a checkpoint" "File too large"
  cmp -s fsize/model.safetensors model10.safetensors && cmp -s fsize/optimizer.safetensors optimizer10.safetensors ||
    fail "file-size limit: the previous checkpoint changed"
  expect_no_temporaries fsize "file-size limit"
  "$kiln" train "${run[@]}" "${every5[@]}" --out fsize --steps 20 --resume >/dev/null 2>err.txt || fail "file-size limit: --resume: $(tail -n 1 err.txt)"
  expect_same fsize ref20 "file-size limit, then --resume"

  # ---- SIGKILL between the two files of a checkpoint ----
  # The optimizer state of step 20 in place, the weights still of step 10 (the kill came
  # between the two renames): the previous optimizer state, kept beside it, is the weights'.
  cp -r ref10 between
  cp ref10/optimizer.safetensors between/optimizer.prev.safetensors
  cp ref20/optimizer.safetensors between/optimizer.safetensors
  "$kiln" train "${run[@]}" "${every5[@]}" --out between --steps 20 --resume >/dev/null 2>err.txt ||
    fail "killed between the checkpoint's files: --resume: $(tail -n 1 err.txt)"
  grep -q "resuming from between/optimizer.prev.safetensors" err.txt ||
    fail "killed between the checkpoint's files: the previous optimizer state was not used"
  expect_same between ref20 "killed between the checkpoint's files, then --resume"
  # The run that resumed so must not keep the optimizer state that was ahead as the previous
  # one at its first checkpoint: a second kill between that checkpoint's files would leave no
  # optimizer state of the weights' step.
  cp -r ref10 between2
  cp ref10/optimizer.safetensors between2/optimizer.prev.safetensors
  cp ref20/optimizer.safetensors between2/optimizer.safetensors
  "$kiln" train "${run[@]}" --eval-every 1 --seed 11 --out between2 --steps 11 --resume >/dev/null 2>err.txt ||
    fail "killed between the checkpoint's files: --resume to step 11: $(tail -n 1 err.txt)"
  [ "$(step_of between2/optimizer.prev.safetensors)" = 10 ] ||
    fail "killed between the checkpoint's files: the next checkpoint kept step $(step_of between2/optimizer.prev.safetensors) as the previous optimizer state, not 10"

  # ---- SIGKILL at random moments of a run that checkpoints every step ----
  steps=400 kills=12
  [ "$quick" = 1 ] && steps=100 kills=4
  "$kiln" train "${run[@]}" --eval-every 1 --seed 11 --out every_whole --steps $steps >/dev/null 2>&1 ||
    fail "SIGKILL: the reference run"
  RANDOM=7 # the same delays on every run of this test (where they land depends on the machine)
  at=()
  for k in $(seq 1 $kills); do
    resume=()
    [ -f killed/model.safetensors ] && resume=(--resume)
    "$kiln" train "${run[@]}" --eval-every 1 --seed 11 --out killed --steps $steps "${resume[@]}" >/dev/null 2>err.txt &
    pid=$!
    sleep "0.$((RANDOM % 40 + 10))"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    if [ -f killed/model.safetensors ]; then
      "$kiln" eval --ckpt killed/model.safetensors --data text.txt --backend "$backend" >/dev/null 2>eval_err.txt ||
        fail "SIGKILL $k: the checkpoint on disk does not load: $(cat eval_err.txt)"
    fi
    if grep -q '^kiln: error' err.txt; then fail "SIGKILL $k: the run before it failed: $(tail -n 1 err.txt)"; fi
    at+=("$(step_of killed/model.safetensors)")
  done
  echo "ok   SIGKILL: $kills kills, the checkpoints on disk after each: ${at[*]}; every one loaded and resumed"
  resume=()
  [ -f killed/model.safetensors ] && resume=(--resume)
  "$kiln" train "${run[@]}" --eval-every 1 --seed 11 --out killed --steps $steps "${resume[@]}" >/dev/null 2>err.txt ||
    fail "SIGKILL: the last --resume: $(tail -n 1 err.txt)"
  expect_same killed every_whole "SIGKILL x $kills, then --resume"
  expect_no_temporaries killed "SIGKILL"
}

device_faults() {
  # ---- a device lost mid-step, an allocation that fails (KILN_FAULT) ----
  KILN_FAULT=count "$kiln" train "${run[@]}" "${every5[@]}" --out counted --steps 10 >/dev/null 2>err.txt
  calls=$(sed -n 's/^kiln: KILN_FAULT=count: \([0-9]*\) kernel calls.*/\1/p' err.txt)
  if [ -z "$calls" ]; then
    echo "skipped: this build has no KILN_FAULT (configure with -DKILN_FAULTS=ON)"
  else
    # three quarters of the way: after the checkpoint of step 5
    KILN_FAULT=device-lost@$((calls * 3 / 4)) "$kiln" train "${run[@]}" "${every5[@]}" --out lost --steps 10 >/dev/null 2>err.txt
    rc=$?
    expect_failure "device lost at kernel call $((calls * 3 / 4)) of $calls" "device lost"
    [ "$(step_of lost/model.safetensors)" = 5 ] || fail "device lost: the checkpoint holds step $(step_of lost/model.safetensors), not 5"
    expect_loads lost "device lost"
    "$kiln" train "${run[@]}" "${every5[@]}" --out lost --steps 10 --resume >/dev/null 2>err.txt || fail "device lost: --resume: $(tail -n 1 err.txt)"
    expect_same lost ref10 "device lost, then --resume"

    # the allocations of a resumed run; the last one fails
    cp -r ref10 oom_count
    KILN_FAULT=count "$kiln" train "${run[@]}" "${every5[@]}" --out oom_count --steps 20 --resume >/dev/null 2>err.txt
    allocs=$(sed -n 's/.* \([0-9]*\) device allocations$/\1/p' err.txt)
    cp -r ref10 oom
    KILN_FAULT=oom@"$allocs" "$kiln" train "${run[@]}" "${every5[@]}" --out oom --steps 20 --resume >/dev/null 2>err.txt
    rc=$?
    expect_failure "device allocation $allocs of $allocs fails" "out of device memory"
    cmp -s oom/model.safetensors ref10/model.safetensors || [ "$(step_of oom/model.safetensors)" -gt 10 ] ||
      fail "out of device memory: the checkpoint was damaged"
    expect_loads oom "out of device memory"
    "$kiln" train "${run[@]}" "${every5[@]}" --out oom --steps 20 --resume >/dev/null 2>err.txt || fail "out of device memory: --resume: $(tail -n 1 err.txt)"
    expect_same oom ref20 "out of device memory, then --resume"
  fi
}

refusals() {
  # ---- refused before any training step ----
  : >a_file
  "$kiln" train "${run[@]}" "${every5[@]}" --out a_file/run --steps 10 >/dev/null 2>err.txt
  rc=$?
  expect_failure "an output directory that cannot be made" "a_file/run"

  cp -r ref10 truncated
  head -c 3000 ref10/model.safetensors >truncated/model.safetensors
  cp truncated/metrics.jsonl metrics_before.jsonl
  "$kiln" train "${run[@]}" "${every5[@]}" --out truncated --steps 20 --resume >/dev/null 2>err.txt
  rc=$?
  expect_failure "--resume from a truncated checkpoint" "truncated/model.safetensors"
  cmp -s truncated/metrics.jsonl metrics_before.jsonl || fail "truncated checkpoint: a step ran (metrics.jsonl changed)"

  for i in $(seq 1 20); do printf 'word %d\twort %d\n' "$i" "$i"; done >pairs.tsv
  "$kiln" train --model seq2seq --data pairs.tsv --out s2s --backend "$backend" --layers 1 --heads 2 --dim 16 \
    --steps 1 --max-len 16 >/dev/null 2>&1 || fail "the seq2seq checkpoint for the next case"
  "$kiln" train "${run[@]}" "${every5[@]}" --out s2s --steps 20 --resume >/dev/null 2>err.txt
  rc=$?
  expect_failure "--resume of a GPT from a seq2seq checkpoint" "s2s/model.safetensors"

  cp -r ref10 other_run
  "$kiln" train "${run[@]}" --eval-every 5 --seed 12 --out other_seed --steps 10 >/dev/null 2>&1
  cp other_seed/optimizer.safetensors other_run/optimizer.safetensors
  "$kiln" train "${run[@]}" "${every5[@]}" --out other_run --steps 20 --resume >/dev/null 2>err.txt
  rc=$?
  expect_failure "--resume with another run's optimizer state" "optimizer.safetensors"
}

# The device's faults on every backend; the program's own (signals, the disk, bad
# checkpoints) do not depend on the device: cpu only.
device_faults
if [ "$backend" = cpu ]; then
  signal_and_disk_faults
  refusals
fi

[ $failures -eq 0 ] && echo "ok: every fault ends with one line and a checkpoint that resumes"
exit $((failures > 0))
