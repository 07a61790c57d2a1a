#!/usr/bin/env python3
"""samples/stability/reproduce.py's judgements on made-up runs: how a run is classified
(a one-step run at loss 5.5 is too short, not stalled; a long run at the unigram level is
stalled; above it, it did not learn; a failed run diverged) and how a claim is judged
(reproduced, partly, not). Exit 0: pass, 1: fail."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples", "stability"))
import reproduce  # noqa: E402

failures = 0


def check(what, got, want):
    global failures
    ok = got == want
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {got!r}" + ("" if ok else f", want {want!r}"))


class Runs:
    unigram = 3.31

    def __init__(self):
        self.results = {}

    def add(self, name, steps, val, rc=0, loss=None):
        rows = [{"step": s, "loss": loss if loss is not None else val} for s in range(1, steps + 1)]
        rows[-1]["val_loss"] = val
        self.results[name] = {"rows": rows, "rc": rc, "error": "the loss is nan at step 3" if rc else ""}
        return self.results[name]


r = Runs()
check("one step at 5.5", reproduce.outcome(r, r.add("a", 1, 5.5)), "too short (1 step) to learn")
check("five steps at the unigram level", reproduce.outcome(r, r.add("b", 5, 3.3)), "too short (5 steps) to learn")
check("600 steps at the unigram level", reproduce.outcome(r, r.add("c", 600, 3.35)),
      "stalled at the unigram level (3.31)")
check("600 steps above it", reproduce.outcome(r, r.add("d", 600, 4.0)), "did not learn (above the unigram level, 3.31)")
check("600 steps below it", reproduce.outcome(r, r.add("e", 600, 2.6)), "trained")
check("one step below it", reproduce.outcome(r, r.add("f", 1, 2.0)), "trained")
check("a failed run", reproduce.outcome(r, r.add("g", 3, 2.0, rc=1)), "diverged: the loss is nan at step 3")

check("all parts hold", reproduce.verdict([True, True]), "Reproduced")
check("some hold", reproduce.verdict([True, False]), "Partly reproduced")
check("none holds", reproduce.verdict([False, False]), "Not reproduced")

# RealFormer: equal losses do not reproduce "helps"; a loss lower by more than BETTER does
r.add("postln_warmup", 600, 2.623)
r.add("preln_warmup", 600, 2.481)
r.add("realformer_warmup", 600, 2.625)
check("RealFormer equal to Post-LN", reproduce.claims_realformer(r)[0].split(".**")[0], "**Not reproduced")
r.add("realformer_warmup", 600, 2.5)
check("RealFormer below Post-LN", reproduce.claims_realformer(r)[0].split(".**")[0], "**Reproduced")
sys.exit(1 if failures else 0)
