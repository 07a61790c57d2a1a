#!/usr/bin/env bash
# LoRA fine-tuning end to end (model/lora.h, `kiln train --init BASE --lora-rank R`):
#   - a small GPT trained first is the base, as its kiln checkpoint and as GGUF at f16, q8_0
#     and q4_0 (kiln export);
#   - --out holds PEFT's files: adapter_model.safetensors with PEFT's names, shapes [r, in] and
#     [out, r] in F32 and kiln's record of the base, adapter_config.json with PEFT's keys (read
#     here with python's json and struct, against PEFT's documented layout); --lora-targets
#     c_proj holds GPT-2's two c_proj and nothing else;
#   - the adapters learn: the validation loss falls on new text;
#   - a Llama-family base (grouped-query attention, SwiGLU): q_proj, v_proj and up_proj
#     adapters with PEFT's names and their column ranges' widths;
#   - 20 steps equal 10 plus a resumed 10 bit for bit (dropout on the adapters and the
#     model, gradient accumulation): the last metrics, the adapter and the optimizer state;
#   - fp16 (loss scaling) trains to the fp32 run's loss within 0.05;
#   - an f16 GGUF base trains (held in f32 under fp32, said in one line), and q8_0 and q4_0
#     bases train with their blocks kept quantized, and a Q4_K_M mix; the f16 and q4_0 bases
#     of the same model end within 0.05 of each other in validation loss;
#   - two MPI ranks train as one process with --grad-accum 2, loss for loss (cpu, with mpirun);
#   - every base file is byte-identical after all of it;
#   - bad input (cpu only): one line, exit 1, and no adapter file in --out.
#   host_lora.sh KILN WORKDIR [BACKEND]
set -u
. "$(dirname "$0")/host_common.sh"
host_setup "$@"

numbered_lines 400 "row %d: sing a song of sixpence, a pocket full of rye" >text.txt
numbered_lines 300 "verse %d: four and twenty blackbirds baked in a pie" >tune.txt
"$kiln" train --data text.txt --out base --layers 2 --heads 2 --dim 32 --block 32 --batch 8 --steps 150 \
  --warmup 10 --lr 3e-3 --eval-every 0 --eval-windows 8 --backend cpu >/dev/null 2>train.err ||
  { cat train.err; exit 1; }
for t in f16 q8_0 q4_0; do
  "$kiln" export --ckpt base/model.safetensors --format gguf --type "$t" --out "base/$t.gguf" 2>export.err ||
    { cat export.err; exit 1; }
done
cp -r base pristine

common=(--data tune.txt --batch 4 --lr 5e-3 --min-lr 5e-3 --warmup 4 --eval-windows 8 --seed 11
        --backend "$backend" --trust-device)
lora=("${common[@]}" --init base/model.safetensors --lora-rank 4)

# last_val DIR: the validation loss of the last metrics row
last_val() { "$py" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[-1])["val_loss"])' "$1/metrics.jsonl"; }
first_val() { "$py" -c 'import json,sys; print([r for r in map(json.loads, open(sys.argv[1])) if "val_loss" in r][0]["val_loss"])' "$1/metrics.jsonl"; }
# within A B TOL: |A - B| <= TOL
within() { "$py" -c 'import sys; a,b,t=map(float,sys.argv[1:]); sys.exit(0 if abs(a-b)<=t else 1)' "$@"; }

# ---- PEFT's files ----
"$kiln" train "${lora[@]}" --steps 20 --eval-every 5 --out plain >/dev/null 2>plain.err || { cat plain.err; exit 1; }
check_peft() { # DIR RANK MODULES...: the files PEFT reads, as its documentation lays them out
  "$py" - "$@" <<'EOF'
import json, struct, sys
d, r, modules = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
shape = {"attn.c_attn": (32, 96), "attn.c_proj": (32, 32), "mlp.c_fc": (32, 128), "mlp.c_proj": (128, 32)}
raw = open(d + "/adapter_model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
meta = header.pop("__metadata__")
want = {}
for layer in range(2):
    for m in modules:
        fan_in, fan_out = shape[m]
        p = "base_model.model.transformer.h.%d.%s." % (layer, m)
        want[p + "lora_A.weight"] = [r, fan_in]
        want[p + "lora_B.weight"] = [fan_out, r]
got = {k: v["shape"] for k, v in header.items()}
assert got == want, "tensors %s, expected %s" % (sorted(got), sorted(want))
assert all(v["dtype"] == "F32" for v in header.values())
assert meta["kiln.base.architecture"] == "gpt2" and meta["step"] and meta["kiln.base.hash"], meta
c = json.load(open(d + "/adapter_config.json"))
for k, v in {"r": r, "lora_alpha": 8, "peft_type": "LORA", "task_type": "CAUSAL_LM", "bias": "none",
             "fan_in_fan_out": True, "lora_dropout": 0}.items():
    assert c[k] == v, "%s: %r, expected %r" % (k, c[k], v)
assert sorted(c["target_modules"]) == sorted(modules), c["target_modules"]
assert c["base_model_name_or_path"].endswith("base/model.safetensors"), c["base_model_name_or_path"]
EOF
}
check_peft plain 4 attn.c_attn attn.c_proj mlp.c_fc mlp.c_proj && echo "ok: PEFT's files" || fail "PEFT's files"
grep -q "LoRA rank 4, alpha 8.*trainable weights.*frozen, F32" plain.err || fail "the summary: $(cat plain.err)"
"$kiln" train "${lora[@]}" --steps 2 --eval-every 0 --lora-targets c_proj --out subset >/dev/null 2>&1 &&
  check_peft subset 4 attn.c_proj mlp.c_proj && echo "ok: --lora-targets c_proj" || fail "--lora-targets c_proj"
first=$(first_val plain) last=$(last_val plain)
"$py" -c "import sys; sys.exit(0 if $last < $first - 0.05 else 1)" && echo "ok: val loss $first -> $last" ||
  fail "the adapters do not learn: val loss $first -> $last"

# ---- the Llama family: q/k/v and gate/up are column ranges of kiln's fused matrices ----
"$kiln" train --model llama --data text.txt --out lbase --layers 2 --heads 4 --kv-heads 2 --dim 32 --block 32 \
  --batch 8 --steps 20 --warmup 5 --lr 3e-3 --eval-every 0 --backend cpu >/dev/null 2>train.err || { cat train.err; exit 1; }
cp lbase/model.safetensors pristine/llama.safetensors
"$kiln" train "${common[@]}" --init lbase/model.safetensors --lora-rank 2 --lora-targets q_proj,v_proj,up_proj \
  --steps 10 --eval-every 5 --out llama >/dev/null 2>llama.err || fail "LoRA on a llama base: $(tail -n 1 llama.err)"
if "$py" - llama <<'EOF'
import json, struct, sys
raw = open(sys.argv[1] + "/adapter_model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
meta = header.pop("__metadata__")
# 4 query heads and 2 key/value heads of 8: q 32 wide, v 16; SwiGLU's F is 96
want = {}
for layer in range(2):
    for m, out in (("self_attn.q_proj", 32), ("self_attn.v_proj", 16), ("mlp.up_proj", 96)):
        p = "base_model.model.model.layers.%d.%s." % (layer, m)
        want[p + "lora_A.weight"], want[p + "lora_B.weight"] = [2, 32], [out, 2]
assert {k: v["shape"] for k, v in header.items()} == want, sorted(header)
assert meta["kiln.base.architecture"] == "llama", meta
c = json.load(open(sys.argv[1] + "/adapter_config.json"))
assert c["fan_in_fan_out"] is False and c["target_modules"] == ["self_attn.q_proj", "self_attn.v_proj", "mlp.up_proj"], c
EOF
then echo "ok: a llama base's PEFT files (q_proj, v_proj, up_proj), val loss $(last_val llama)"; else fail "a llama base's PEFT files"; fi

# ---- exact resume ----
resume=("${lora[@]}" --lora-dropout 0.1 --dropout 0.1 --grad-accum 2 --eval-every 5)
"$kiln" train "${resume[@]}" --steps 20 --out whole >whole.out 2>/dev/null || fail "the uninterrupted run"
"$kiln" train "${resume[@]}" --steps 10 --out split >/dev/null 2>&1 || fail "the first half"
# the resumed run's base comes from the adapter's record when --init is not given
"$kiln" train "${common[@]}" --lora-dropout 0.1 --dropout 0.1 --grad-accum 2 --eval-every 5 --steps 20 --out split \
  --resume >split.out 2>/dev/null || fail "the resumed half"
unmeasured='s/, "\(tokens_per_s\|host_rss_bytes\|device_bytes\)": [^,}]*//g'
if [ "$(tail -n 1 whole/metrics.jsonl | sed "$unmeasured")" = "$(tail -n 1 split/metrics.jsonl | sed "$unmeasured")" ] &&
   cmp -s whole/adapter_model.safetensors split/adapter_model.safetensors &&
   cmp -s whole/optimizer.safetensors split/optimizer.safetensors && cmp -s whole.out split.out; then
  echo "ok: 10 + resumed 10 steps = 20 steps bit for bit ($(cat split.out))"
else
  fail "resume: $(tail -n 1 whole/metrics.jsonl) vs $(tail -n 1 split/metrics.jsonl)"
fi

# ---- fp16 ----
"$kiln" train "${lora[@]}" --steps 20 --eval-every 0 --precision fp16 --out half >/dev/null 2>half.err ||
  fail "fp16: $(cat half.err)"
within "$(last_val half)" "$(last_val plain)" 0.05 && echo "ok: fp16 $(last_val half) vs fp32 $(last_val plain)" ||
  fail "fp16 ends at $(last_val half), fp32 at $(last_val plain)"

# ---- GGUF bases: f16, and the quantized blocks ----
for t in f16 q8_0 q4_0; do
  "$kiln" train "${common[@]}" --init "base/$t.gguf" --lora-rank 4 --steps 20 --eval-every 0 --out "gguf_$t" \
    >/dev/null 2>"gguf_$t.err" || { fail "a $t GGUF base: $(tail -n 1 "gguf_$t.err")"; continue; }
  echo "ok: a $t GGUF base trains to val loss $(last_val "gguf_$t")"
done
grep -q "F16 weights are held in f32" gguf_f16.err || fail "the f16 base under fp32 is not said"
"$kiln" train "${common[@]}" --init base/q8_0.gguf --lora-rank 4 --steps 20 --eval-every 0 --precision fp16 \
  --out gguf_q8_0_half >/dev/null 2>half.err || fail "fp16 on a q8_0 base: $(tail -n 1 half.err)"
within "$(last_val gguf_q8_0_half)" "$(last_val gguf_q8_0)" 0.05 &&
  echo "ok: fp16 on a q8_0 base: $(last_val gguf_q8_0_half)" || fail "fp16 on a q8_0 base ends at $(last_val gguf_q8_0_half)"
grep -q "frozen, Q4_0)" gguf_q4_0.err || fail "the q4_0 base's format is not said: $(cat gguf_q4_0.err)"
if [ -f gguf_f16/metrics.jsonl ] && [ -f gguf_q4_0/metrics.jsonl ]; then
  within "$(last_val gguf_f16)" "$(last_val gguf_q4_0)" 0.05 &&
    echo "ok: f16 and q4_0 bases end within 0.05 ($(last_val gguf_f16), $(last_val gguf_q4_0))" ||
    fail "f16 and q4_0 bases: $(last_val gguf_f16) vs $(last_val gguf_q4_0)"
fi

# ---- a K-quant mix (llama.cpp's Q4_K_M: Q4_K beside Q6_K pieces of one matrix), 256 wide ----
"$kiln" train --model llama --data text.txt --out kbase --layers 1 --heads 4 --kv-heads 2 --dim 256 --block 16 \
  --batch 2 --steps 1 --eval-every 0 --eval-windows 2 --backend cpu >/dev/null 2>train.err || { cat train.err; exit 1; }
"$kiln" quantize --ckpt kbase/model.safetensors --format q4_k_m --out kbase/q4_k_m.gguf 2>/dev/null || fail "quantize q4_k_m"
cp kbase/q4_k_m.gguf pristine/q4_k_m.gguf
"$kiln" train "${common[@]}" --init kbase/q4_k_m.gguf --lora-rank 4 --steps 2 --eval-every 0 --out kquant \
  >/dev/null 2>kquant.err && grep -q "frozen, Q4_K)" kquant.err && echo "ok: a Q4_K_M base trains" ||
  fail "a Q4_K_M base: $(tail -n 1 kquant.err)"

# ---- data parallelism: 2 ranks follow one process with --grad-accum 2 (cpu; needs mpirun) ----
if [ "$backend" = cpu ] && command -v mpirun >/dev/null && "$kiln" info 2>/dev/null | grep -q "^data-parallel training: MPI"; then
  dp=("${lora[@]}" --lora-dropout 0.1 --dropout 0.1 --eval-every 3 --steps 6)
  # LeakSanitizer (a KILN_SANITIZE build) would report Open MPI's own allocations at exit
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=0 \
    mpirun -q --oversubscribe -np 2 "$kiln" train "${dp[@]}" --out ranks >/dev/null 2>ranks.err ||
    fail "mpirun -np 2: $(tail -n 1 ranks.err)"
  "$kiln" train "${dp[@]}" --grad-accum 2 --out single >/dev/null 2>&1 || fail "the single process of the MPI check"
  losses() { grep -o '"loss": [0-9.e-]*' "$1/metrics.jsonl" | tr '\n' ' '; }
  [ -n "$(losses single)" ] && [ "$(losses ranks)" = "$(losses single)" ] &&
    echo "ok: 2 ranks = one process with --grad-accum 2 ($(losses ranks | cut -c1-40)...)" ||
    fail "MPI: $(losses ranks) vs $(losses single)"
else
  echo "note: the MPI check needs the cpu backend, mpirun and an MPI build"
fi

# ---- the base is untouched ----
for f in model.safetensors f16.gguf q8_0.gguf q4_0.gguf; do
  cmp -s "pristine/$f" "base/$f" || fail "base/$f changed"
done
cmp -s pristine/llama.safetensors lbase/model.safetensors || fail "lbase/model.safetensors changed"
cmp -s pristine/q4_k_m.gguf kbase/q4_k_m.gguf || fail "kbase/q4_k_m.gguf changed"
echo "ok: every base file is byte-identical after training"

# ---- bad input (the program, not the device) ----
if [ "$backend" = cpu ]; then
  refused() { # WHAT WANT ARGS...: one line, and no adapter file in --out bad
    rm -rf bad
    expect_one_line_error "$@"
    { [ -e bad/adapter_model.safetensors ] || [ -e bad/adapter_config.json ]; } && fail "$1: an adapter file was left"
  }
  refused "rank 0" "rank must be positive" train "${common[@]}" --init base/model.safetensors --lora-rank 0 --out bad
  refused "a rank above a side" "exceeds the smaller side" train "${common[@]}" --init base/model.safetensors \
    --lora-rank 33 --out bad
  refused "a target matching nothing" '"q_proj" matches no module' train "${lora[@]}" --lora-targets q_proj --out bad
  refused "--lora-rank without --init" "needs --init BASE" train "${common[@]}" --lora-rank 4 --out bad
  refused "--lora-alpha without --lora-rank" "needs --lora-rank" train "${common[@]}" --init base/model.safetensors \
    --lora-alpha 16 --out bad
  refused "--lora-rank on seq2seq" "applies to GPT models" train --model seq2seq --data tune.txt --lora-rank 4 --out bad
  refused "--lora-rank on --resume of a full run" "holds no LoRA adapter" train "${common[@]}" --lora-rank 4 \
    --out base --resume
  refused "another rank on resume" "differs from the resumed adapter" train "${common[@]}" --lora-rank 8 --steps 30 \
    --out plain --resume
fi
[ $failures -eq 0 ]
