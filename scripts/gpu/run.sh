#!/usr/bin/env bash
# scripts/gpu/run.sh: kiln's checks and benchmarks on a GPU machine that can install nothing,
# from the pack scripts/gpu/pack.sh made (gpu-pack/, carried beside the repository), in
# about five minutes. docs/gpu.md says how to run it and how to read what it writes.
#
#   set-up  NVIDIA's Vulkan ICD and OpenCL library found and handed to the pack's loaders
#           (VK_DRIVER_FILES, OCL_ICD_VENDORS); nvidia-smi, kiln info, the driver versions
#   1       kiln verify (full; --quick in the shortened mode) on Vulkan and on OpenCL; the
#           pack's test programs on each
#   2       kiln bench: ceilings, GEMM f32 and f16, kernel classes; torch.matmul at the same
#           GEMM shapes (scripts/gpu/torch_matmul.py), as a ratio
#   3       nanoGPT's shakespeare-char configuration for a fixed number of steps: kiln on
#           Vulkan and on OpenCL, fp32 and fp16, and samples/nanogpt_torch.py on CUDA (eager)
#   4       kiln bench decode (every weight format) and kiln bench precision, on each backend
#
# Every part has its own time box, within RUN_BUDGET seconds for the whole run (default 540,
# under the device machine's 10 minutes a command), and is recorded as passed, failed (it ran
# and said no) or skipped (it could not run: no device, no PyTorch, its time box ran out),
# with one line saying why. After each part $OUT holds the whole story so far, within the
# device tool's output limits (4 files):
#   report.md     the set-up, one row per part, and each part's figures
#   report.json   the same as data (schema kiln-gpu-run/1)
#   run.log       every command's full output, in order
#   results.tar.gz  kiln's own JSON results (verify, bench, decode), torch_matmul.json and the
#                 training runs' metrics.jsonl
# Environment: OUT (default ./gpu-out), KILN_GPU_PACK (default ./gpu-pack), RUN_QUICK=1 (the
# shortened mode of scripts/gpu/rehearse.sh: tiny sizes, a few steps), RUN_BUDGET (seconds),
# KILN_TORCH_PYTHON (the python3 that holds torch; default: the first of python3 on PATH,
# /opt/torch/.venv/bin/python3, /usr/local/bin/python3, /usr/bin/python3 that imports it).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
pack=$(realpath -m "${KILN_GPU_PACK:-$root/gpu-pack}")
out=$(realpath -m "${OUT:-$root/gpu-out}")
quick=${RUN_QUICK:-0}
budget=${RUN_BUDGET:-540}
kiln=$pack/bin/kiln
work=$(mktemp -d /tmp/kiln-gpu-run.XXXXXX)
trap 'rm -rf "$work"' EXIT # the full mode's training runs write about 130 MB of checkpoint each
deadline=$((SECONDS + budget))
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)

say() { printf 'run: %s\n' "$*" >&2; }

. "$root/scripts/gpu/run_report.sh"
. "$root/scripts/gpu/run_setup.sh"

# ---- parts ----

# part ID TITLE BOX_S COMMAND...: runs COMMAND for at most BOX_S seconds (less when the run's
# budget is nearly spent), its output in logs/ID.log, then records and publishes the result.
part() {
    local id=$1 title=$2 box=$3 rc=0 start=$SECONDS status reason=""
    shift 3
    local left=$((deadline - SECONDS - 5)) log=$work/logs/$id.log
    if ((left < 10)); then
        record "$id" "$title" skipped 0 "the run's budget of $budget s was spent before this part"
        return 1
    fi
    ((box > left)) && box=$left
    say "$id $title (at most $box s)"
    printf '$ %s\n' "$*" >"$log"
    # a function of this script runs in a bash of its own, which timeout can stop (main
    # exports the functions and the variables they read)
    declare -F "$1" >/dev/null && set -- bash -c '"$@"' _ "$@"
    timeout -k 5 "$box" "$@" >>"$log" 2>&1 || rc=$?
    if ((rc == 0)); then
        status=passed
    elif ((rc == 124 || rc == 137)); then
        status=skipped reason="its time box of $box s ran out"
    else
        status=failed reason="exit status $rc: $(grep -v '^\s*$' "$log" | tail -1 | cut -c1-200)"
    fi
    record "$id" "$title" "$status" $((SECONDS - start)) "$reason"
    [[ $status == passed ]]
}

# The pack's test programs on one backend, each in its own time box; a program that does
# not apply to the backend (test_opencl_* on vulkan) is left out.
test_programs() {
    # CPU stand-ins compile every pipeline cold and run the GEMM variants slowly
    local backend=$1 t failed=0 ran=0 each=$((quick ? 150 : 30))
    for t in "$pack"/bin/test_*; do
        t=$(basename "$t")
        [[ $t =~ ^test_(vulkan|opencl)_ && $t != test_${backend}_* ]] && continue
        if ((quick)) && [[ $t =~ ^test_(gpu_gemm|op_matmul)$ ]]; then
            echo "== $t: left out in the shortened mode (its large products take minutes on a CPU driver)"
            continue
        fi
        ran=$((ran + 1))
        # check's fork mode does not survive OpenCL drivers (tests/opencl.cmake)
        local env=(CK_FORK=no)
        # the memory test fills a 256 MiB heap, not the whole device, as tests/vulkan.cmake
        # registers it (on OpenCL it lowers the limits itself)
        [[ $t == test_gpu_memory && $backend == vulkan ]] && env+=(KILN_VK_MAX_BINDING=65536 KILN_VK_HEAP_BUDGET=268435456)
        echo "== $t --backend $backend (${env[*]})"
        local start=$SECONDS
        env "${env[@]}" timeout -k 5 "$each" "$pack/bin/$t" --backend "$backend" ||
            { echo "== $t FAILED (exit status $?)"; failed=$((failed + 1)); }
        echo "== $t: $((SECONDS - start)) s"
    done
    echo "== $ran programs, $failed failed"
    ((failed == 0))
}

# the shakespeare-char configuration of nanoGPT (its config/train_shakespeare_char.py), or a
# tiny one in the shortened mode
train_args() {
    if ((quick)); then
        echo --layers 2 --heads 2 --dim 64 --block 32 --batch 8 --dropout 0.2 --steps 8 --warmup 2
    else
        echo --layers 6 --heads 6 --dim 384 --block 256 --batch 64 --dropout 0.2 --steps 50 --warmup 100
    fi
    echo --lr 1e-3 --min-lr 1e-4 --beta2 0.99 --weight-decay 0.1 --clip 1
}

kiln_train() { # kiln_train BACKEND PRECISION
    # shellcheck disable=SC2046 # train_args is a word list
    "$kiln" train --backend "$1" --precision "$2" --data "$data" --out "$work/results/train-$1-$2" \
        --eval-every 0 --log-every 10 $(train_args)
}

torch_train() {
    # shellcheck disable=SC2046
    "$torch_python" "$root/samples/nanogpt_torch.py" --device cuda --data "$data" --log-every 10 \
        --warmup-steps "$warmup_steps" $(train_args)
}

precision_args() {
    if ((quick)); then
        echo --layers 2 --heads 2 --dim 64 --block 32 --batch 8 --steps 2 --warmup-steps 1
    else
        echo --layers 6 --heads 6 --dim 384 --block 256 --batch 64 --steps 10 --warmup-steps 3
    fi
}

# ---- the steps ----

step_verify() {
    local b q=()
    # the shortened mode's CPU stand-ins compile every kernel cold: minutes for the full set
    ((quick)) && q=(--quick)
    for b in vulkan opencl; do
        if has_backend "$b"; then
            part "1-verify-$b" "kiln verify$( ((quick)) && echo " --quick"), $b" $((quick ? 240 : 75)) \
                "$kiln" verify --backend "$b" "${q[@]}" --json "$work/results/verify-$b.json"
        else
            record "1-verify-$b" "kiln verify, $b" skipped 0 "$(no_device_reason "$b")"
        fi
    done
    for b in vulkan opencl; do
        if has_backend "$b"; then
            part "1-tests-$b" "test programs, $b" $((quick ? 240 : 45)) test_programs "$b"
        else
            record "1-tests-$b" "test programs, $b" skipped 0 "$(no_device_reason "$b")"
        fi
    done
}

step_bench() {
    local b jsons=() q=()
    ((quick)) && q=(--quick)
    for b in vulkan opencl; do
        if has_backend "$b"; then
            part "2-bench-$b" "kiln bench ceilings and kernels, $b" $((quick ? 120 : 60)) \
                "$kiln" bench --backend "$b" --only ceilings,kernels "${q[@]}" --json "$work/results/bench-$b.json" &&
                jsons+=("$work/results/bench-$b.json")
        else
            record "2-bench-$b" "kiln bench ceilings and kernels, $b" skipped 0 "$(no_device_reason "$b")"
        fi
    done
    if [[ -z $torch_python ]]; then
        record 2-torch-matmul "torch.matmul at kiln's GEMM shapes" skipped 0 "$torch_reason"
    elif ((${#jsons[@]} == 0)); then
        record 2-torch-matmul "torch.matmul at kiln's GEMM shapes" skipped 0 "no kiln bench result to take the shapes from"
    else
        part 2-torch-matmul "torch.matmul at kiln's GEMM shapes" 40 "$torch_python" "$root/scripts/gpu/torch_matmul.py" \
            --device cuda --json "$work/results/torch_matmul.json" "${jsons[@]}"
    fi
    if grep -q '^coopmat_gemm no' "$pack/MANIFEST"; then
        record 2-coopmat "cooperative-matrix GEMM (Vulkan)" skipped 0 \
            "not in this pack: Debian 12's glslc cannot compile GL_KHR_cooperative_matrix (cmake/vulkan_backend.cmake)"
    fi
}

step_train() {
    local b p
    for b in vulkan opencl; do
        for p in fp32 fp16; do
            if has_backend "$b"; then
                part "3-train-$b-$p" "nanoGPT shakespeare-char, kiln $b $p" $((quick ? 120 : 50)) kiln_train "$b" "$p"
            else
                record "3-train-$b-$p" "nanoGPT shakespeare-char, kiln $b $p" skipped 0 "$(no_device_reason "$b")"
            fi
        done
    done
    if [[ -n $torch_python ]]; then
        part 3-train-torch "nanoGPT shakespeare-char, PyTorch CUDA eager fp32" 50 torch_train
    else
        record 3-train-torch "nanoGPT shakespeare-char, PyTorch CUDA eager fp32" skipped 0 "$torch_reason"
    fi
}

step_decode() {
    local b q=()
    ((quick)) && q=(--quick)
    for b in vulkan opencl; do
        if has_backend "$b"; then
            part "4-decode-$b" "kiln bench decode, $b" $((quick ? 120 : 60)) \
                "$kiln" bench decode --backend "$b" "${q[@]}" --json "$work/results/decode-$b.json"
            # shellcheck disable=SC2046
            part "4-precision-$b" "kiln bench precision, $b" $((quick ? 120 : 30)) \
                "$kiln" bench precision --backend "$b" $(precision_args)
        else
            record "4-decode-$b" "kiln bench decode, $b" skipped 0 "$(no_device_reason "$b")"
            record "4-precision-$b" "kiln bench precision, $b" skipped 0 "$(no_device_reason "$b")"
        fi
    done
}

main() {
    mkdir -p "$out" "$work/logs" "$work/results"
    [[ -x $kiln ]] || { echo "run: no kiln in $pack: run scripts/gpu/pack.sh where you build, and carry gpu-pack" >&2; exit 1; }
    warmup_steps=5
    ((quick)) && warmup_steps=2
    setup
    export -f test_programs train_args kiln_train torch_train
    export root pack kiln quick work data torch_python warmup_steps
    step_verify
    step_bench
    step_train
    step_decode
    publish
    say "done in $SECONDS s: $(summary_counts); $out"
    # non-zero when a part ran and failed; a skipped part says why in the report
    ! cut -f3 "$work/parts.tsv" | grep -qx failed
}

main
