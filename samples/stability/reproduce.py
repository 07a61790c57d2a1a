#!/usr/bin/env python3
"""Reproduces the training-stability papers' claims at small scale with `kiln train`, and
writes DIR/report.md with the SVG plots (`kiln plot`) beside it.

  samples/stability/reproduce.py DATA --out DIR [--quick] [--backend cpu|vulkan|opencl]
                                 [--kiln PATH] [--seed N]

DATA is a text file (tinyshakespeare.txt is the one the committed report used). --quick
(under 15 minutes on 2 CPU cores) uses small models and few steps; the default is sized for a
GPU. Every run's command line is in the report, so each one reproduces on its own.

The experiments (docs/stability.md explains the options):
  1. a deep Post-LN GPT without warmup against the same model with warmup, with Pre-LN, with
     ReZero, with Admin and with DeepNorm (Xiong et al. 2020; Bachlechner et al. 2020;
     Liu et al. 2020; Wang et al. 2022);
  2. per-layer gradient norms at initialization, Post-LN against Pre-LN (Xiong et al.);
  3. attention entropy collapse at a high learning rate and after the temperature is lowered
     mid-run, with and without sigma-reparam (Zhai et al. 2023);
  4. GAU with Post-Norm without warmup (Hua et al. 2022);
  5. RealFormer against Post-LN and Pre-LN at equal steps (He et al. 2020).
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def find_kiln(given):
    if given:
        return given
    built = os.path.join(HERE, "..", "..", "build", "host", "kiln")
    if os.path.exists(built):
        return os.path.abspath(built)
    found = shutil.which("kiln")
    if not found:
        sys.exit("reproduce.py: no kiln program: build it (cmake --build build) or pass --kiln PATH")
    return found


def sizes(quick):
    """Model and run sizes: quick for 2 CPU cores, the default for a GPU."""
    if quick:
        return {
            "deep": ["--layers", "12", "--heads", "4", "--dim", "64", "--block", "64", "--batch", "8"],
            "small": ["--layers", "4", "--heads", "4", "--dim", "64", "--block", "64", "--batch", "8"],
            "steps": 300, "collapse_steps": 300, "eval_every": 25, "eval_windows": 16, "warmup": 100,
        }
    return {
        "deep": ["--layers", "24", "--heads", "8", "--dim", "256", "--block", "128", "--batch", "32"],
        "small": ["--layers", "6", "--heads", "8", "--dim", "256", "--block", "128", "--batch", "32"],
        "steps": 3000, "collapse_steps": 2000, "eval_every": 100, "eval_windows": 64, "warmup": 1000,
    }


class Runner:
    def __init__(self, kiln, data, out, backend, seed):
        self.kiln, self.data, self.out, self.backend, self.seed = kiln, data, out, backend, seed
        self.results = {}

    def train(self, name, args, note=""):
        run_dir = os.path.join(self.out, "runs", name)
        cmd = [self.kiln, "train", "--data", self.data, "--out", run_dir, "--backend", self.backend,
               "--seed", str(self.seed)] + args
        t0 = time.time()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        seconds = time.time() - t0
        rows = read_metrics(os.path.join(run_dir, "metrics.jsonl"))
        last_line = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
        result = {
            "name": name, "cmd": " ".join(["kiln"] + cmd[1:]), "note": note, "rc": proc.returncode,
            "seconds": seconds, "rows": rows, "error": last_line if proc.returncode else "",
        }
        self.results[name] = result
        status = "ok" if proc.returncode == 0 else "FAILED: " + last_line
        print(f"  {name:28s} {seconds:6.1f} s  final loss {fmt(final(rows, 'loss'))}  "
              f"val {fmt(final(rows, 'val_loss'))}  {status}", flush=True)
        return result

    def plot(self, svg, names, metrics, extra=()):
        dirs = [os.path.join(self.out, "runs", n) for n in names if self.results[n]["rows"]]
        cmd = [self.kiln, "plot"] + dirs + ["-o", os.path.join(self.out, svg), "--metric", metrics] + list(extra)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            print(f"  plot {svg}: {proc.stderr.strip()}", file=sys.stderr)
            return False
        return True


def read_metrics(path):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def final(rows, key):
    for row in reversed(rows):
        if row.get(key) is not None:
            return row[key]
    return None


def fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return str(v)
    return f"{v:.{digits}f}"


def diverged(result):
    """A run fails when kiln stopped it (a non-finite loss) or it ended far above its best."""
    if result["rc"] != 0:
        return True
    losses = [r["loss"] for r in result["rows"] if r.get("loss") is not None]
    return not losses or not math.isfinite(losses[-1])


def min_entropy(rows):
    values = [r["attn_entropy_min"] for r in rows if r.get("attn_entropy_min") is not None]
    return min(values) if values else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", help="training text (e.g. tinyshakespeare.txt)")
    ap.add_argument("--out", required=True, help="directory for the runs, the plots and report.md")
    ap.add_argument("--quick", action="store_true", help="small models, under 15 minutes on 2 CPU cores")
    ap.add_argument("--backend", default="cpu", help="cpu, vulkan, opencl or auto")
    ap.add_argument("--kiln", help="the kiln program (default: build/host/kiln, then PATH)")
    ap.add_argument("--seed", type=int, default=1337)
    a = ap.parse_args()
    if not os.path.isfile(a.data):
        sys.exit(f"reproduce.py: {a.data}: no such file")
    kiln = find_kiln(a.kiln)
    os.makedirs(a.out, exist_ok=True)
    z = sizes(a.quick)
    r = Runner(kiln, os.path.abspath(a.data), os.path.abspath(a.out), a.backend, a.seed)
    start = time.time()
    common = ["--eval-every", str(z["eval_every"]), "--eval-windows", str(z["eval_windows"]), "--log-every", "1000"]
    steps = ["--steps", str(z["steps"])]
    # a learning rate at which warmup matters for Post-LN (Xiong et al. train Post-LN with
    # warmup and show it failing without), no clipping to hide it, constant after warmup
    deep = z["deep"] + steps + common + ["--lr", "2e-3", "--min-lr", "2e-3", "--clip", "0"]
    warm = ["--warmup", str(z["warmup"])]
    cold = ["--warmup", "0"]

    print("1. deep Post-LN without warmup, and the fixes", flush=True)
    exp1 = [
        ("postln_no_warmup", ["--norm", "post"] + cold),
        ("postln_warmup", ["--norm", "post"] + warm),
        ("preln_no_warmup", ["--norm", "pre"] + cold),
        ("rezero_no_warmup", ["--norm", "none", "--residual", "rezero"] + cold),
        ("admin_no_warmup", ["--norm", "post", "--residual", "admin"] + cold),
        ("deepnorm_no_warmup", ["--norm", "post", "--residual", "deepnorm"] + cold),
    ]
    for name, flags in exp1:
        r.train(name, deep + flags)
    r.plot("deep_postln.svg", [n for n, _ in exp1], "loss,val_loss")

    print("2. gradient norms per layer at initialization", flush=True)
    one = z["deep"] + ["--steps", "1", "--eval-every", "1", "--eval-windows", "4", "--lr", "1e-3", "--warmup", "0"]
    r.train("grad_init_postln", one + ["--norm", "post"])
    r.train("grad_init_preln", one + ["--norm", "pre"])
    r.plot("grad_norm_layers.svg", ["grad_init_postln", "grad_init_preln"], "grad_norm_layers")

    print("3. attention entropy collapse, with and without sigma-reparam", flush=True)
    csteps = z["collapse_steps"]
    small = z["small"] + ["--steps", str(csteps)] + common + ["--clip", "0", "--warmup", "0"]
    hot = ["--lr", "1e-2", "--min-lr", "1e-2"]
    drop = ["--lr", "1e-3", "--min-lr", "1e-3", "--attn-temperature-at", f"{csteps // 3}:0.05"]
    exp3 = [
        ("high_lr", small + hot),
        ("high_lr_sigma_reparam", small + hot + ["--sigma-reparam"]),
        ("temperature_drop", small + drop),
        ("temperature_drop_sigma_reparam", small + drop + ["--sigma-reparam"]),
    ]
    for name, flags in exp3:
        r.train(name, flags)
    r.plot("entropy_collapse.svg", [n for n, _ in exp3], "loss,attn_entropy")

    print("4. GAU with Post-Norm, no warmup", flush=True)
    r.train("gau_postnorm_no_warmup", deep + ["--layer-type", "gau", "--norm", "post"] + cold)
    r.plot("gau.svg", ["gau_postnorm_no_warmup", "postln_no_warmup", "postln_warmup"], "loss,val_loss")

    print("5. RealFormer against Post-LN and Pre-LN", flush=True)
    r.train("realformer_warmup", deep + ["--norm", "post", "--residual-attention"] + warm)
    r.train("preln_warmup", deep + ["--norm", "pre"] + warm)
    r.plot("realformer.svg", ["realformer_warmup", "postln_warmup", "preln_warmup"], "loss,val_loss")

    write_report(r, a, z, time.time() - start)
    print(f"report: {os.path.join(a.out, 'report.md')} ({time.time() - start:.0f} s)")


def table(r, names):
    lines = ["| run | final train loss | final val loss | lowest head entropy | outcome | time |",
             "|---|---|---|---|---|---|"]
    for n in names:
        x = r.results[n]
        outcome = "diverged: " + x["error"] if diverged(x) else "trained"
        lines.append(f"| `{n}` | {fmt(final(x['rows'], 'loss'))} | {fmt(final(x['rows'], 'val_loss'))} | "
                     f"{fmt(min_entropy(x['rows']))} | {outcome} | {x['seconds']:.0f} s |")
    return "\n".join(lines)


def commands(r, names):
    return "\n".join(["```sh"] + [r.results[n]["cmd"] for n in names] + ["```"])


def best_val(x):
    values = [row["val_loss"] for row in x["rows"] if row.get("val_loss") is not None]
    return min(values) if values else None


def verdicts(r):
    """Each claim, checked on the numbers of this run (not assumed)."""
    out = []
    base = r.results["postln_no_warmup"]
    base_val = final(base["rows"], "val_loss") if not diverged(base) else None
    fixes = ["postln_warmup", "preln_no_warmup", "rezero_no_warmup", "admin_no_warmup", "deepnorm_no_warmup"]
    better = []
    for n in fixes:
        v = final(r.results[n]["rows"], "val_loss")
        if not diverged(r.results[n]) and v is not None and (base_val is None or v < base_val - 0.1):
            better.append(f"`{n}` ({fmt(v)})")
    what = "diverged" if base_val is None else f"reached val loss {fmt(base_val)}"
    out.append(f"1. Post-LN without warmup {what}; {len(better)} of {len(fixes)} fixes did better by more than "
               f"0.1: {', '.join(better) or 'none'}.")
    post = final(r.results["grad_init_postln"]["rows"], "grad_norm_layers") or []
    pre = final(r.results["grad_init_preln"]["rows"], "grad_norm_layers") or []
    if post and pre:
        out.append(f"2. At initialization the last block's gradient norm is {post[-1] / post[0]:.2f}x the first "
                   f"block's under Post-LN and {pre[-1] / pre[0]:.2f}x under Pre-LN.")
    e = {n: min_entropy(r.results[n]["rows"]) for n in ["high_lr", "high_lr_sigma_reparam", "temperature_drop",
                                                         "temperature_drop_sigma_reparam"]}
    out.append("3. Lowest head entropy: " + ", ".join(f"`{n}` {fmt(v)}" for n, v in e.items()) + "; final losses: " +
               ", ".join(f"`{n}` {fmt(final(r.results[n]['rows'], 'loss'))}" for n in e) + ".")
    g = r.results["gau_postnorm_no_warmup"]
    out.append(f"4. GAU with Post-Norm and no warmup {'diverged' if diverged(g) else 'trained'}: val loss "
               f"{fmt(final(g['rows'], 'val_loss'))} against Post-LN's {fmt(base_val)} without warmup.")
    out.append("5. At equal steps, val loss: " + ", ".join(
        f"`{n}` {fmt(final(r.results[n]['rows'], 'val_loss'))}" for n in ["realformer_warmup", "postln_warmup",
                                                                         "preln_warmup"]) + ".")
    return "\n".join(out)


def write_report(r, a, z, seconds):
    mode = "--quick" if a.quick else "default (GPU-sized)"
    exp1 = ["postln_no_warmup", "postln_warmup", "preln_no_warmup", "rezero_no_warmup", "admin_no_warmup",
            "deepnorm_no_warmup"]
    exp3 = ["high_lr", "high_lr_sigma_reparam", "temperature_drop", "temperature_drop_sigma_reparam"]
    exp5 = ["realformer_warmup", "postln_warmup", "preln_warmup"]
    text = f"""# Training stability: the papers' claims, reproduced with kiln

Written by `samples/stability/reproduce.py {os.path.basename(a.data)} --out DIR {'--quick ' if a.quick else ''}--backend {a.backend} --seed {a.seed}`
(mode {mode}, {seconds / 60:.1f} minutes in all). Every run below lists its command; the seed
fixes the init, the batches and dropout, so each reproduces exactly on the same backend.

## What came out

{verdicts(r)}

## 1. A deep Post-LN GPT without warmup, and five fixes

Xiong et al. (2020): Post-LN's gradients near the output are large at initialization, so a
large learning rate at the start derails it and it needs warmup; Pre-LN does not. ReZero,
Admin and DeepNorm keep Post-LN's (or no) normalization and fix the start instead.

![loss](deep_postln.svg)

{table(r, exp1)}

{commands(r, exp1)}

## 2. Gradient norms per layer at initialization

The gradient norm of each block's parameters at step 1 (`grad_norm_layers` in metrics.jsonl).

![grad norms](grad_norm_layers.svg)

{table(r, ["grad_init_postln", "grad_init_preln"])}

{commands(r, ["grad_init_postln", "grad_init_preln"])}

## 3. Attention entropy collapse and sigma-reparam

Zhai et al. (2023): attention entropy collapsing toward zero goes with unstable training;
sigma-reparam bounds the attention logits' growth. Here the collapse is provoked by a high
learning rate and by dividing the scores by a temperature of 0.05 a third of the way in.

![entropy](entropy_collapse.svg)

{table(r, exp3)}

{commands(r, exp3)}

## 4. GAU with Post-Norm, without warmup

Hua et al. (2022) train FLASH's gated attention units with Post-Norm and no warmup trouble.

![gau](gau.svg)

{table(r, ["gau_postnorm_no_warmup"])}

{commands(r, ["gau_postnorm_no_warmup"])}

## 5. RealFormer against Post-LN and Pre-LN

He et al. (2020): residual attention scores help Post-LN at equal steps.

![realformer](realformer.svg)

{table(r, exp5)}

{commands(r, ["realformer_warmup", "preln_warmup"])}
"""
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
