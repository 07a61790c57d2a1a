#!/usr/bin/python3
"""Chooses the prompts of models.PROMPTS (run by hand when models.py's weights change; its
output is pasted there). A random model's greedy step is a near tie now and then, and where
the best two logits are closer than the arithmetic of the peers (llama.cpp rounds
activations to f16, or to 8 bits for Q8_0: about 1% of the logits' spread) the peers part
ways for reasons that are no bug. So the tests decode only prompts whose every one of the 32
greedy steps, in the float64 reference, wins by at least MARGIN times the spread (standard
deviation) of that step's logits, and whose continuation has at least DISTINCT different
tokens (a model that repeats one token tests little). Candidates: random prompts of 4 to 9
ids, in a fixed order; the best three by (distinct tokens, margin) are kept.

    select_prompts.py [VARIANT...] [--candidates N]
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_folder  # noqa: E402
import models  # noqa: E402
import reference  # noqa: E402

MARGIN, DISTINCT, STEPS = 0.06, 5, 32


def relative_margin(ref, prompt, tokens, margins):
    """The smallest margin over the steps, each over its step's logit spread."""
    ids = torch.tensor([prompt + tokens[:-1]])
    spread = ref.logits(ids)[0, len(prompt) - 1:].std(dim=-1)
    return float(min(m / s for m, s in zip(margins, spread.tolist())))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("variants", nargs="*", default=list(models.VARIANTS))
    ap.add_argument("--candidates", type=int, default=400)
    ap.add_argument("--seed", type=int, help="try this seed of the weights instead of models.seed()")
    a = ap.parse_args()
    if a.seed is not None:
        models.SEEDS.update({n: a.seed for n in a.variants})
    torch.set_num_threads(1)
    for name in a.variants:
        with tempfile.TemporaryDirectory() as d:
            hf_folder.write(d, models.config(name), models.weights(name, models.seed(name)), "F32")
            ref = reference.Reference(d)
        rng = np.random.default_rng(7)
        good = []
        for _ in range(a.candidates):
            p = [int(x) for x in rng.integers(0, models.VOCAB - 1, int(rng.integers(4, 10)))]
            tokens, margins = ref.greedy(p, STEPS)
            if len(set(tokens)) < DISTINCT or min(margins) <= 0:
                continue
            rel = relative_margin(ref, p, tokens, margins)
            if rel >= MARGIN:
                good.append((len(set(tokens)), rel, p))
        good.sort(reverse=True)
        print(f'    "{name}": {[g[2] for g in good[:3]]},  # distinct {[g[0] for g in good[:3]]}, '
              f'margin {[round(g[1], 3) for g in good[:3]]}, {len(good)} of {a.candidates}', flush=True)


if __name__ == "__main__":
    main()
