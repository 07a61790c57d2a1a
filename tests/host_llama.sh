#!/usr/bin/env bash
# `kiln train --model llama` and the Llama family's flags alongside what already works:
#   - --resume continues bit for bit (GQA 2/1, q/k norm, qkv biases, untied head), in fp32
#     and in fp16 (mixed precision, loss scaling);
#   - the KV cache decodes the tokens of decoding without it (rope at positions pos0 + t),
#     greedy and sampled, past the end of the context too;
#   - eval in fp16 reads the f32 checkpoint within 0.01 of fp32's loss;
#   - the stability toolkit composes with RMSNorm and rope: Post-LN with DeepNorm,
#     sigma-reparam, a temperature schedule and the linear schedule train to a finite loss;
#   - a loaded model keeps its architecture, and rope with GAU or RealFormer is refused, as is
#     a GGUF export of a Llama-shaped block llama.cpp cannot hold (Post-LN), each with one line
#     (cpu only: about the program, not the device).
#   host_llama.sh KILN WORKDIR [BACKEND]
set -u
. "$(dirname "$0")/host_common.sh"
host_setup "$@"
numbered_lines 400 "row %d: sing a song of sixpence, a pocket full of rye" >text.txt
shape=(--model llama --kv-heads 1 --qk-norm --bias qkv --untied --data text.txt --backend "$backend" --layers 2
       --heads 2 --dim 16 --block 16 --batch 3 --warmup 4 --eval-windows 8 --seed 11)
llama=("${shape[@]}" --lr 2e-3 --min-lr 2e-3 --dropout 0.1 --grad-accum 2 --eval-every 5)

# ---- exact resume, fp32 and fp16 ----
expect_exact_resume "${llama[@]}" >resume.txt && echo "ok   fp32 resume is bit-exact" ||
  fail "fp32 resume: $(cat resume.txt)"
mkdir -p half && (cd half && cp ../text.txt . && expect_exact_resume "${llama[@]}" --precision fp16 >resume.txt) &&
  echo "ok   fp16 resume is bit-exact" || fail "fp16 resume: $(cat half/resume.txt)"

# ---- the KV cache ----
"$kiln" train "${shape[@]}" --steps 60 --lr 1e-2 --min-lr 1e-2 --eval-every 0 --out model \
  >/dev/null 2>model.err || { cat model.err; exit 1; }
expect_cache_agrees model/model.safetensors "greedy with the cache" --prompt "row 12: sing" --max-new 12 --greedy
expect_cache_agrees model/model.safetensors "greedy past the context" --prompt "row 7" --max-new 40 --greedy
expect_cache_agrees model/model.safetensors "sampled with the cache" --prompt "row 3" --max-new 12 --seed 4 --top-k 5

# ---- fp16 eval of the f32 checkpoint ----
e32=$("$kiln" eval --ckpt model/model.safetensors --data text.txt --backend "$backend" 2>/dev/null | awk '{print $2}')
e16=$("$kiln" eval --ckpt model/model.safetensors --data text.txt --backend "$backend" --precision fp16 2>/dev/null |
  awk '{print $2}')
if [ -n "$e32" ] && [ -n "$e16" ] && "$py" -c "import sys; sys.exit(abs($e32 - $e16) > 0.01)"; then
  echo "ok   eval fp32 $e32, fp16 $e16"
else
  fail "eval fp32 '$e32' vs fp16 '$e16'"
fi

# ---- the stability toolkit with RMSNorm and rope ----
if "$kiln" train --model llama --norm post --residual deepnorm --sigma-reparam --attn-temperature-at 5:0.8 \
    --lr-schedule linear --data text.txt --backend "$backend" --layers 2 --heads 2 --kv-heads 1 --dim 16 --block 16 \
    --batch 3 --steps 10 --eval-every 10 --eval-windows 8 --out toolkit >toolkit.out 2>toolkit.err &&
    grep -q "^val loss [0-9]" toolkit.out; then
  echo "ok   post-RMSNorm, DeepNorm, sigma-reparam, temperature schedule: $(cat toolkit.out)"
else
  fail "the toolkit with --model llama: $(tail -n 2 toolkit.err)"
fi

# ---- refused, one line each ----
if [ "$backend" = cpu ]; then
  fail=0
  expect_kiln_refused "--kv-heads against a loaded model" "--kv-heads differs from the model" \
    train --model llama --data text.txt --backend cpu --steps 2 --init model/model.safetensors --kv-heads 2 \
    --out refused1
  expect_kiln_refused "rope with GAU" "position rope does not apply to layer-type gau" \
    train --model llama --layer-type gau --data text.txt --out refused2
  expect_kiln_refused "rope with RealFormer" "position rope does not combine with residual-attention" \
    train --model llama --residual-attention --data text.txt --out refused3
  expect_kiln_refused "KV heads not dividing the heads" "n_kv_head = 3 does not divide n_head = 4" \
    train --model llama --heads 4 --kv-heads 3 --data text.txt --out refused4
  expect_kiln_refused "an unknown --mlp" "--mlp relu is not one of gelu, swiglu" \
    train --mlp relu --data text.txt --out refused5
  expect_kiln_refused "a Post-LN Llama-shaped model as GGUF" "which llama.cpp's llama, qwen2 and qwen3 cannot hold" \
    export --ckpt toolkit/model.safetensors --format gguf --out toolkit.gguf
  [ $fail -eq 0 ] || failures=$((failures + 1))
fi
[ $failures -eq 0 ] && echo "ok: the Llama family trains, resumes, decodes and refuses as the GPT does"
exit $((failures > 0))
