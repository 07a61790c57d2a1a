#!/usr/bin/python3
"""Chooses the prompts of models.PROMPTS (run by hand when models.py's weights change; its
output is pasted there), and says whether a prompt is decisive (make_models.py checks the
chosen ones again).

A random model's greedy step is a near tie now and then, and where the best two logits are
closer than the peers' arithmetic moves them, the peers part ways for reasons that are no
bug. The largest such move: the 8-bit rounding of the activations that a Q8_0 product does
(llama.cpp's CPU, and kiln's CPU and Vulkan: each block of 32 activations to int8 with
d = max|x| / 127), about 1% of the logits here. Q8Activations is that rounding's model: the
reference with the inputs of every projection so rounded. A prompt is decisive when, for
every one of its 32 greedy steps, the exact reference and Q8Activations choose the same
token and each wins by at least MARGIN times the spread of that step's logits, and the
continuation has at least DISTINCT different tokens (a model that repeats one token tests
little). Candidates: random prompts of 4 to 9 ids in a fixed order; the three with the
largest margins are kept.

    select_prompts.py [VARIANT...] [--candidates N] [--seed S]
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


def round_8bit(x, block=32):
    """Each block of 32 (or block) values along the last axis as int8 times max|x| / 127."""
    b = x.reshape(-1, block)
    d = b.abs().max(dim=1, keepdim=True).values / 127
    d[d == 0] = 1
    return (torch.round(b / d) * d).reshape(x.shape)


class Q8Activations(reference.Reference):
    """The reference with the inputs of the projections rounded to 8 bits (the attention's
    and the MLP's inputs, and down_proj's): a model of a Q8_0 product's arithmetic. A
    subclass rounds otherwise through round() (make_kquant_models.py: Q8_K's blocks of 256)."""

    def round(self, x):
        return round_8bit(x)

    def attention(self, x, p, cos, sin):
        return super().attention(self.round(x), p, cos, sin)

    def mlp(self, x, p):
        w, x = self.w, self.round(x)
        h = torch.nn.functional.silu(x @ w[p + "mlp.gate_proj.weight"].T) * (x @ w[p + "mlp.up_proj.weight"].T)
        return self.round(h) @ w[p + "mlp.down_proj.weight"].T


def decisive(exact, rounded, prompt):
    """(tokens, margin) of a decisive prompt (the smallest margin of either run), else None."""
    tokens, m = exact.greedy(prompt, STEPS)
    if len(set(tokens)) < DISTINCT or min(m) < MARGIN:
        return None
    again, m8 = rounded.greedy(prompt, STEPS)
    if again != tokens or min(m8) < MARGIN:
        return None
    return tokens, min(m + m8)


def references(folder):
    return reference.Reference(folder), Q8Activations(folder)


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
            exact, rounded = references(d)
        rng = np.random.default_rng(7)
        good = []
        for _ in range(a.candidates):
            p = [int(x) for x in rng.integers(0, models.VOCAB - 1, int(rng.integers(4, 10)))]
            found = decisive(exact, rounded, p)
            if found:
                good.append((found[1], len(set(found[0])), p))
        good.sort(reverse=True)
        print(f'    "{name}": {[g[2] for g in good[:3]]},  # margin {[round(g[0], 3) for g in good[:3]]}, '
              f'distinct {[g[1] for g in good[:3]]}, {len(good)} of {a.candidates} (seed {models.seed(name)})',
              flush=True)


if __name__ == "__main__":
    main()
