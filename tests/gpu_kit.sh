#!/usr/bin/env bash
# tests/gpu_kit.sh SOURCE_DIR: the GPU kit (scripts/gpu/, docs/gpu.md) without a GPU or root:
# every script parses; run_report.sh's reports survive awkward text (quotes, backslashes,
# tabs, pipes) as valid JSON that holds what was recorded, and stay within the device tool's
# output limits; where a pack was made (gpu-pack/), it still fits beside the tracked files.
# The kit itself runs on the GPU machine (run.sh) and as root (rehearse.sh): neither runs here.
set -euo pipefail
root=$1
for f in "$root"/scripts/gpu/*.sh; do bash -n "$f"; done
/usr/bin/python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$root/scripts/gpu/torch_matmul.py"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$work/out
mkdir -p "$out" "$work/logs" "$work/results"
say() { :; }
# shellcheck disable=SC2034 # read by run_report.sh
warmup_steps=2
# shellcheck source=../scripts/gpu/run_report.sh
. "$root/scripts/gpu/run_report.sh"

fact gpu 'NVIDIA "H200" | 143771 MiB'
fact torch ''
printf '%s\n' '$ kiln verify --backend vulkan' 'FAIL  norm/layernorm  f16  forward  vs cpu  max abs 1e-2' \
    'kiln verify: vulkan NVIDIA H200: 3 runs, 2 passed, 1 failed, 0 skipped, 1.0 s' >"$work/logs/1-verify-vulkan.log"
record 1-verify-vulkan "kiln verify, vulkan" failed 3 $'exit status 1: a "quoted" \\ back\\slash\tand a tab'
printf '%s\n' 'step 10/50  loss 3.1000  1.0 s' 'step 50/50  loss 2.5000  2.0 s' 'tokens_per_s 1234.5' \
    'val loss 2.4000' >"$work/logs/3-train-torch.log"
record 3-train-torch "nanoGPT, PyTorch" passed 7 ""
record 2-coopmat "cooperative-matrix GEMM (Vulkan)" skipped 0 "not in this pack"

/usr/bin/python3 - "$out/report.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "kiln-gpu-run/1", r["schema"]
assert r["setup"] == {"gpu": 'NVIDIA "H200" | 143771 MiB', "torch": ""}, r["setup"]
parts = {p["id"]: p for p in r["parts"]}
assert [p["status"] for p in r["parts"]] == ["failed", "passed", "skipped"], r["parts"]
v = parts["1-verify-vulkan"]
assert v["reason"] == 'exit status 1: a "quoted" \\ back\\slash and a tab', v["reason"]
assert v["summary"] == "vulkan NVIDIA H200: 3 runs, 2 passed, 1 failed, 0 skipped, 1.0 s", v["summary"]
assert parts["3-train-torch"]["values"] == {"tokens_per_s": 1234.5, "step": 50, "loss": 2.5, "val_loss": 2.4}, parts["3-train-torch"]
assert parts["2-coopmat"]["reason"] == "not in this pack" and parts["2-coopmat"]["values"] is None
assert r["counts"] == "1 passed, 1 failed, 1 skipped", r["counts"]
EOF
grep -q '^FAIL  norm/layernorm' "$out/report.md" || { echo "gpu_kit: report.md lacks verify's FAIL line" >&2; exit 1; }
grep -q '^| torch | 1234.5 |' "$out/report.md" || { echo "gpu_kit: report.md lacks the training table" >&2; exit 1; }
names=$(cd "$out" && ls -A | paste -sd' ')
[[ $names == "report.json report.md results.tar.gz run.log" ]] || { echo "gpu_kit: OUT holds $names" >&2; exit 1; }

if [[ -d $root/gpu-pack ]]; then bash "$root/scripts/gpu/pack.sh" --check-size; fi
echo "gpu_kit: scripts parse, reports valid"
