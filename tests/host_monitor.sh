#!/usr/bin/env bash
# The evaluations' monitoring of seq2seq and BERT runs (model/metrics.h), as the GPT's:
# attn_entropy per layer (the encoder's then the decoder's for seq2seq) with
# attn_entropy_min, and grad_norm_layers. The entropy is checked against its closed form:
# at --attn-temperature 1000 the attention is uniform to within 1e-4, so a query that sees
# k keys has entropy ln k: ln 6 for an encoder over 5 letters and EOS, the mean of ln 1 ..
# ln 6 for the causal decoder over BOS and 5 letters, ln 16 for BERT over 16 positions. The
# per-layer gradient norms are positive, one per block, and together no larger than the
# whole gradient's norm (which also holds the embeddings'). Then `kiln plot` draws both runs
# from two folders named `model`, told apart in the legend, or named by --label.
#   host_monitor.sh KILN WORKDIR
set -eu
. "$(dirname "$0")/host_common.sh"
kiln=$1
host_workdir "$2"

$py - <<'PY'
import random
r = random.Random(1)
with open("pairs.tsv", "w") as f:
    for _ in range(200):
        w = "".join(r.choice("abcdefgh") for _ in range(5))
        f.write(f"{w}\t{w[::-1]}\n")
with open("text.txt", "w") as f:
    for i in range(300):
        f.write(f"row {i}: sing a song of sixpence, a pocket full of rye\n")
PY
common=(--steps 6 --eval-every 3 --backend cpu --seed 3)
"$kiln" train --model seq2seq --data pairs.tsv --dim 32 --heads 4 --enc-layers 1 --dec-layers 3 --max-len 16 \
  --batch-tokens 256 --out s2s/model "${common[@]}" >/dev/null 2>s2s.err || { cat s2s.err; exit 1; }
"$kiln" train --model seq2seq --data pairs.tsv --dim 32 --heads 4 --enc-layers 1 --dec-layers 3 --max-len 16 \
  --batch-tokens 256 --out s2s_uniform "${common[@]}" --attn-temperature 1000 >/dev/null 2>>s2s.err ||
  { cat s2s.err; exit 1; }
"$kiln" train --model bert --data text.txt --layers 3 --heads 2 --dim 32 --block 16 --batch 4 --out bert/model \
  "${common[@]}" >/dev/null 2>bert.err || { cat bert.err; exit 1; }
"$kiln" train --model bert --data text.txt --layers 3 --heads 2 --dim 32 --block 16 --batch 4 --out bert_uniform \
  "${common[@]}" --attn-temperature 1000 >/dev/null 2>>bert.err || { cat bert.err; exit 1; }

$py - <<'PY' || failures=$((failures + 1))
import json, math, sys
bad = []
def rows(run):
    with open(f"{run}/metrics.jsonl") as f:
        return [json.loads(line) for line in f]
def check(run, layers, uniform=None):
    evaluated = [r for r in rows(run) if "val_loss" in r]
    if [r["step"] for r in evaluated] != [3, 6]:
        bad.append(f"{run}: evaluations at {[r['step'] for r in evaluated]}, not 3 and 6")
    for r in evaluated:
        e, g, low = r.get("attn_entropy"), r.get("grad_norm_layers"), r.get("attn_entropy_min")
        if not e or not g or low is None or len(e) != layers or len(g) != layers:
            bad.append(f"{run} step {r['step']}: attn_entropy {e}, attn_entropy_min {low}, grad_norm_layers {g} "
                       f"(want {layers} layers)")
            continue
        if not all(0 <= x <= math.log(16) + 1e-4 for x in e) or not low <= min(e) + 1e-6:
            bad.append(f"{run} step {r['step']}: entropies {e} (lowest head {low}) outside [0, ln 16]")
        if not all(math.isfinite(x) and x > 0 for x in g):
            bad.append(f"{run} step {r['step']}: gradient norms {g}")
        elif math.sqrt(sum(x * x for x in g)) > r["grad_norm"] * (1 + 1e-4):
            bad.append(f"{run} step {r['step']}: the blocks' norms {g} exceed the whole gradient's {r['grad_norm']}")
        if uniform and max(abs(x - want) for x, want in zip(e, uniform)) > 1e-4:
            bad.append(f"{run} step {r['step']}: uniform attention's entropies {e}, want {uniform}")
    print(f"{run}: {evaluated[-1].get('attn_entropy')} {evaluated[-1].get('grad_norm_layers')}")
causal = sum(math.log(k) for k in range(1, 7)) / 6
check("s2s/model", 4)
check("s2s_uniform", 4, [math.log(6)] + [causal] * 3)
check("bert/model", 3)
check("bert_uniform", 3, [math.log(16)] * 3)
for b in bad:
    print("FAIL", b)
sys.exit(1 if bad else 0)
PY

# two folders named model: the legend tells them apart by the folder above; --label names them
"$kiln" plot s2s/model bert/model -o default.svg --metric attn_entropy,grad_norm_layers 2>err.txt ||
  fail "plot: $(cat err.txt)"
for want in s2s/model bert/model; do grep -q ">$want<" default.svg || fail "the legend lacks $want"; done
"$kiln" plot s2s/model bert/model --label translation --label "masked LM" -o labelled.svg \
  --metric attn_entropy,grad_norm_layers 2>err.txt || fail "plot --label: $(cat err.txt)"
for want in translation "masked LM"; do grep -q ">$want<" labelled.svg || fail "the legend lacks $want"; done
grep -q ">grad_norm_layers at step 3<" labelled.svg || fail "the layer panel does not name its step"
[ $failures -eq 0 ] && echo "ok: seq2seq and BERT log attention entropy and per-layer gradient norms; plot labels them"
exit $failures
