#!/usr/bin/env bash
# Decoding with the KV cache gives exactly the tokens of decoding without it: greedy, and
# sampled with temperature, top-k and top-p from the same seed, including past the end of
# the context (where both slide their window the same way).
#   host_decode_cache.sh KILN WORKDIR [BACKEND]
set -eu
. "$(dirname "$0")/host_common.sh"
host_setup "$@"
numbered_lines 300 "verse %d: twinkle twinkle little star, how I wonder what you are" >text.txt
# the model trains on the cpu (checkpoints are the same on every backend); BACKEND decodes
"$kiln" train --data text.txt --out model --backend cpu --layers 1 --heads 2 --dim 32 \
  --block 32 --batch 8 --steps 150 --lr 1e-2 --warmup 10 --eval-every 0 --seed 3 >/dev/null 2>&1
expect_cache_agrees model/model.safetensors "greedy" --prompt "verse 12: twin" --max-new 24 --greedy
expect_cache_agrees model/model.safetensors "greedy past the context" --prompt "verse 7" --max-new 90 --greedy
expect_cache_agrees model/model.safetensors "sampled (T 0.9, top-k 20, top-p 0.9)" --prompt "verse" --max-new 80 \
  --temperature 0.9 --top-k 20 --top-p 0.9 --seed 5
exit $((failures > 0))
