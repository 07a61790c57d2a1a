#!/usr/bin/env python3
"""Reproduces the training-stability papers' claims at small scale with `kiln train`, and
writes DIR/report.md with the SVG plots (`kiln plot`) beside it.

  samples/stability/reproduce.py DATA --out DIR [--quick] [--backend cpu|vulkan|opencl]
                                 [--kiln PATH] [--seed N]

DATA is a text file (tinyshakespeare.txt is the one the committed report used). --quick uses
small models and few steps: 15 runs that took 1.3 to 2.4 minutes on 2 otherwise idle CPU
cores (about 2 CPU-minutes; the report gives its own run's wall and CPU times). The
default is sized for a GPU. Every run's command line is in the report, so each one
reproduces on its own.

Each claim is checked on this run's numbers and the report says whether it was reproduced,
partly reproduced or not reproduced; a difference of validation loss counts when it is over
BETTER nats (a single seed), and a run counts as stalled when it ends within STALL nats of
the byte-unigram cross-entropy (it learned the bytes' frequencies and nothing of context).

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
import concurrent.futures
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BETTER = 0.05          # nats of validation loss that count as a difference
STALL = 0.1            # nats around the unigram level that count as stalled there
TOO_SHORT_STEPS = 10   # a run of fewer steps that has not learned is too short, not stalled
GROWTH = 0.2           # Xiong et al.: the Post-LN profile grows by more than this toward the output


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
            "deep": ["--layers", "12", "--heads", "4", "--dim", "32", "--block", "64", "--batch", "8"],
            "small": ["--layers", "4", "--heads", "4", "--dim", "32", "--block", "64", "--batch", "8"],
            "gau_s": "32", "steps": 600, "collapse_steps": 600, "eval_every": 50, "eval_windows": 16,
            "warmup": 200,
        }
    return {
        "deep": ["--layers", "24", "--heads", "8", "--dim", "256", "--block", "128", "--batch", "32"],
        "small": ["--layers", "6", "--heads", "8", "--dim", "256", "--block", "128", "--batch", "32"],
        "gau_s": "128", "steps": 3000, "collapse_steps": 2000, "eval_every": 100, "eval_windows": 64,
        "warmup": 1000,
    }


class Runner:
    def __init__(self, kiln, data, out, backend, seed, jobs):
        self.kiln, self.data, self.out, self.backend, self.seed = kiln, data, out, backend, seed
        self.jobs = jobs
        self.results = {}

    def train_all(self, runs):
        """Runs (name, args) pairs, `jobs` at a time: on CPU cores one thread each beats
        two threads sharing one small model's ops."""
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.jobs) as pool:
            list(pool.map(lambda run: self.train(*run), runs))

    def train(self, name, args, note=""):
        run_dir = os.path.join(self.out, "runs", name)
        # --force: a second reproduction into the same --out replaces the first one's runs
        cmd = [self.kiln, "train", "--data", self.data, "--out", run_dir, "--force", "--backend", self.backend,
               "--seed", str(self.seed)] + args
        env = dict(os.environ)
        if self.jobs > 1:
            env["OMP_NUM_THREADS"] = "1"
        t0 = time.time()
        rc, stderr, cpu = run_measured(cmd, env)
        seconds = time.time() - t0
        rows = read_metrics(os.path.join(run_dir, "metrics.jsonl"))
        last_line = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        result = {
            "name": name, "cmd": " ".join(["kiln"] + cmd[1:]).replace(self.data, "DATA").replace(self.out, "DIR"),
            "note": note, "rc": rc, "seconds": seconds, "cpu_seconds": cpu,
            "rows": rows, "error": last_line if rc else "",
            "threads": env.get("OMP_NUM_THREADS", "all"),
        }
        self.results[name] = result
        status = "ok" if rc == 0 else "FAILED: " + last_line
        print(f"  {name:28s} {seconds:6.1f} s  final loss {fmt(final(rows, 'loss'))}  "
              f"val {fmt(final(rows, 'val_loss'))}  {status}", flush=True)
        return result

    def plot(self, svg, title, names, metrics, extra=()):
        """One figure; the first run is drawn on top (kiln plot), so the run a figure is
        about comes first."""
        dirs = [os.path.join(self.out, "runs", n) for n in names if self.results[n]["rows"]]
        cmd = ([self.kiln, "plot"] + dirs + ["-o", os.path.join(self.out, svg), "--title", title,
                                             "--metric", metrics] + list(extra))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            print(f"  plot {svg}: {proc.stderr.strip()}", file=sys.stderr)
            return False
        return True


def run_measured(cmd, env):
    """Runs cmd; returns its exit code, its standard error and the CPU seconds (user and
    system) it took, which a busy machine does not inflate as it does the wall time."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return proc.returncode, err.read().decode(errors="replace"), usage.ru_utime + usage.ru_stime


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


def largest_rise(rows, window=25):
    """Instability: the largest rise of the training loss's moving average (over `window`
    steps) above its lowest value so far. A run that only descends scores near 0."""
    losses = [row["loss"] for row in rows if row.get("loss") is not None and math.isfinite(row["loss"])]
    if len(losses) < window:
        return None
    best, rise = float("inf"), 0.0
    for i in range(window, len(losses) + 1):
        avg = sum(losses[i - window:i]) / window
        best = min(best, avg)
        rise = max(rise, avg - best)
    return rise


def unigram_entropy(path):
    """The cross-entropy (nats) of predicting each byte of the training split from byte
    frequencies alone: a model stuck at it has learned nothing about context."""
    with open(path, "rb") as f:
        data = f.read()
    n = len(data) - len(data) // 10  # kiln holds out the last tenth
    counts = [0] * 256
    for b in data[:n]:
        counts[b] += 1
    return -sum(c / n * math.log(c / n) for c in counts if c)


def min_entropy(rows):
    values = [r["attn_entropy_min"] for r in rows if r.get("attn_entropy_min") is not None]
    return min(values) if values else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", help="training text (e.g. tinyshakespeare.txt)")
    ap.add_argument("--out", required=True, help="directory for the runs, the plots and report.md")
    ap.add_argument("--quick", action="store_true", help="small models: 1.3 to 2.4 minutes on 2 idle CPU cores")
    ap.add_argument("--backend", default="cpu", help="cpu, vulkan, opencl or auto")
    ap.add_argument("--kiln", help="the kiln program (default: build/host/kiln, then PATH)")
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--jobs", type=int, default=0,
                    help="runs at a time (default: one per core on --backend cpu, else 1)")
    a = ap.parse_args()
    if a.jobs <= 0:
        a.jobs = (os.cpu_count() or 1) if a.backend == "cpu" else 1
    if not os.path.isfile(a.data):
        sys.exit(f"reproduce.py: {a.data}: no such file")
    kiln = find_kiln(a.kiln)
    os.makedirs(a.out, exist_ok=True)
    z = sizes(a.quick)
    r = Runner(kiln, os.path.abspath(a.data), os.path.abspath(a.out), a.backend, a.seed, a.jobs)
    r.unigram = unigram_entropy(a.data)
    start = time.time()
    common = ["--eval-every", str(z["eval_every"]), "--eval-windows", str(z["eval_windows"]), "--log-every", "1000"]
    steps = ["--steps", str(z["steps"])]
    # a constant rate (min-lr = lr after the warmup) at which the deep Post-LN model fails
    # without warmup at this scale, and no clipping to hide it
    deep = z["deep"] + steps + common + ["--lr", "1e-3", "--min-lr", "1e-3", "--clip", "0"]
    warm = ["--warmup", str(z["warmup"])]
    cold = ["--warmup", "0"]
    exp1 = [
        ("postln_no_warmup", deep + ["--norm", "post"] + cold),
        ("postln_warmup", deep + ["--norm", "post"] + warm),
        ("preln_no_warmup", deep + ["--norm", "pre"] + cold),
        ("rezero_no_warmup", deep + ["--norm", "none", "--residual", "rezero"] + cold),
        ("admin_no_warmup", deep + ["--norm", "post", "--residual", "admin"] + cold),
        ("deepnorm_no_warmup", deep + ["--norm", "post", "--residual", "deepnorm"] + cold),
    ]
    one = z["deep"] + ["--steps", "1", "--eval-every", "1", "--eval-windows", "4", "--lr", "1e-3", "--warmup", "0"]
    exp2 = [("grad_init_postln", one + ["--norm", "post"]), ("grad_init_preln", one + ["--norm", "pre"])]
    csteps = z["collapse_steps"]
    small = z["small"] + ["--steps", str(csteps)] + common + ["--clip", "0", "--warmup", "0"]
    hot = ["--lr", "2e-2", "--min-lr", "2e-2"]
    drop = ["--lr", "1e-3", "--min-lr", "1e-3", "--attn-temperature-at", f"{csteps // 3}:0.05"]
    exp3 = [
        ("high_lr", small + hot),
        ("high_lr_sigma_reparam", small + hot + ["--sigma-reparam"]),
        ("temperature_drop", small + drop),
        ("temperature_drop_sigma_reparam", small + drop + ["--sigma-reparam"]),
    ]
    exp4 = [("gau_postnorm_no_warmup", deep + ["--layer-type", "gau", "--gau-s", z["gau_s"], "--norm", "post"] + cold)]
    exp5 = [("realformer_warmup", deep + ["--norm", "post", "--residual-attention"] + warm),
            ("preln_warmup", deep + ["--norm", "pre"] + warm)]
    print(f"{len(exp1 + exp2 + exp3 + exp4 + exp5)} runs, {a.jobs} at a time", flush=True)
    r.train_all(exp1 + exp2 + exp3 + exp4 + exp5)
    for svg, title, names, metrics in FIGURES:
        r.plot(svg, title, names, metrics)

    write_report(r, a, time.time() - start)
    print(f"report: {os.path.join(a.out, 'report.md')} ({time.time() - start:.0f} s)")


EXP1 = ["postln_no_warmup", "postln_warmup", "preln_no_warmup", "rezero_no_warmup", "admin_no_warmup",
        "deepnorm_no_warmup"]
EXP2 = ["grad_init_postln", "grad_init_preln"]
EXP3 = ["high_lr", "high_lr_sigma_reparam", "temperature_drop", "temperature_drop_sigma_reparam"]
EXP4 = ["gau_postnorm_no_warmup", "postln_no_warmup", "postln_warmup"]
EXP5 = ["realformer_warmup", "postln_warmup", "preln_warmup"]
# each figure titled after its experiment; the run it is about first (drawn on top)
FIGURES = [
    ("deep_postln.svg", "1. A deep Post-LN GPT without warmup, and five fixes", EXP1,
     "loss,val_loss,grad_norm_layers"),
    ("grad_norm_layers.svg", "2. Gradient norm per block at initialization: Post-LN and Pre-LN", EXP2,
     "grad_norm_layers"),
    ("entropy_collapse.svg", "3. Attention entropy collapse, with and without sigma-reparam", EXP3,
     "loss,attn_entropy"),
    ("gau.svg", "4. GAU with Post-Norm without warmup, against Post-LN", EXP4, "loss,val_loss"),
    ("realformer.svg", "5. RealFormer against Post-LN and Pre-LN at equal steps", EXP5, "loss,val_loss"),
]


def last_step(x):
    return max((row["step"] for row in x["rows"]), default=0)


def outcome(r, x):
    """What became of a run: diverged; too short (a few steps that have not reached the
    unigram level: a measurement, not a training run); did not learn (long, but above the
    unigram level); stalled at the unigram level; or trained."""
    if diverged(x):
        return "diverged: " + x["error"]
    v = final(x["rows"], "val_loss")
    if v is None:
        return "not evaluated"
    steps = last_step(x)
    if steps < TOO_SHORT_STEPS and v > r.unigram - STALL:
        return f"too short ({steps} step{'s' if steps != 1 else ''}) to learn"
    if v > r.unigram + STALL:
        return f"did not learn (above the unigram level, {r.unigram:.2f})"
    if v > r.unigram - STALL:
        return f"stalled at the unigram level ({r.unigram:.2f})"
    return "trained"


def table(r, names):
    lines = ["| run | final train loss | final val loss | lowest head entropy | outcome | wall time | CPU time |",
             "|---|---|---|---|---|---|---|"]
    for n in names:
        x = r.results[n]
        lines.append(f"| `{n}` | {fmt(final(x['rows'], 'loss'))} | {fmt(final(x['rows'], 'val_loss'))} | "
                     f"{fmt(min_entropy(x['rows']))} | {outcome(r, x)} | {x['seconds']:.0f} s | "
                     f"{x['cpu_seconds']:.0f} s |")
    return "\n".join(lines)


def commands(r, names):
    return "\n".join(["```sh"] + [r.results[n]["cmd"] for n in names] + ["```"])


def val(r, n):
    """A run's final validation loss, or None when it diverged."""
    x = r.results[n]
    return None if diverged(x) else final(x["rows"], "val_loss")


def better(r, a, b):
    """Whether run a ended below run b by more than BETTER (a run that diverged is worse)."""
    va, vb = val(r, a), val(r, b)
    return va is not None and (vb is None or va < vb - BETTER)


def verdict(parts):
    """Reproduced when every part holds, partly when some do, not when none does."""
    held = sum(1 for ok in parts if ok)
    return "Reproduced" if held == len(parts) else "Partly reproduced" if held else "Not reproduced"


def claim(status, paper, text, evidence):
    return f"**{status}.** {paper}: {text} {evidence}"


def claims_warmup(r):
    """Experiment 1: Post-LN needs warmup, Pre-LN does not, and each fix trains it without."""
    base = "postln_no_warmup"
    fixes = [("postln_warmup", "Xiong et al. (2020)", "warmup lets the deep Post-LN model train."),
             ("preln_no_warmup", "Xiong et al. (2020)", "Pre-LN trains the deep model without warmup."),
             ("rezero_no_warmup", "Bachlechner et al. (2020)", "ReZero trains the deep model without warmup."),
             ("admin_no_warmup", "Liu et al. (2020)", "Admin trains the deep Post-LN model without warmup."),
             ("deepnorm_no_warmup", "Wang et al. (2022)", "DeepNorm trains the deep Post-LN model without warmup.")]
    failed = outcome(r, r.results[base]) != "trained"
    out = [claim(verdict([failed]), "Xiong et al. (2020)", "a deep Post-LN model fails without warmup.",
                 f"`{base}` {outcome(r, r.results[base])}: val loss {fmt(val(r, base))}.")]
    for n, who, text in fixes:
        same = val(r, n) is not None and val(r, base) is not None and abs(val(r, n) - val(r, base)) < 1e-3
        out.append(claim(verdict([better(r, n, base)]), who, text,
                         f"`{n}`: {outcome(r, r.results[n])}, val loss {fmt(val(r, n))} against `{base}`'s "
                         f"{fmt(val(r, base))}" + (" (the same final loss: both end predicting the bytes' "
                                                   "frequencies alone)." if same else ".")))
    return out


def claims_gradients(r):
    """Experiment 2: at initialization Post-LN's block gradients grow toward the output,
    Pre-LN's stay level."""
    post = final(r.results["grad_init_postln"]["rows"], "grad_norm_layers") or []
    pre = final(r.results["grad_init_preln"]["rows"], "grad_norm_layers") or []
    if len(post) < 3 or len(pre) < 3:
        return [claim("Not reproduced", "Xiong et al. (2020)", "gradient profiles at initialization.",
                      "The runs logged no per-block gradient norms.")]
    # from the second block on: Post-LN's first block stands apart (below)
    grow_post, grow_pre = post[-1] / post[1] - 1, pre[-1] / pre[1] - 1
    return [claim(verdict([grow_post > GROWTH, abs(grow_pre) < grow_post]), "Xiong et al. (2020)",
                  "at initialization Post-LN's gradient norm grows from block to block toward the output; Pre-LN's "
                  "stays level.",
                  f"Gradient norm per block at step 1, first to last: Post-LN {' '.join(f'{g:.3g}' for g in post)}; "
                  f"Pre-LN {' '.join(f'{g:.3g}' for g in pre)}. From the second block to the last it changes by "
                  f"{100 * grow_post:+.1f}% under Post-LN (more than {100 * GROWTH:.0f}% would reproduce the claim) "
                  f"and {100 * grow_pre:+.1f}% under Pre-LN. Post-LN's first block stands apart: its LayerNorm "
                  f"divides by the small standard deviation of GPT-2's token and position embeddings (std 0.02 "
                  f"each), which scales its gradients up.")]


def claims_entropy(r):
    """Experiment 3: sigma-reparam keeps the attention entropy from collapsing, and a
    collapse goes with unstable training."""
    pairs = [("high_lr", "a high learning rate"), ("temperature_drop", "the temperature drop")]
    e = {n: min_entropy(r.results[n]["rows"]) for n in EXP3}
    rise = {n: largest_rise(r.results[n]["rows"]) for n in EXP3}
    raised = [e[n] is not None and e[n + "_sigma_reparam"] is not None and e[n + "_sigma_reparam"] > e[n] + BETTER
              for n, _ in pairs]
    steadier = [rise[n] is not None and rise[n + "_sigma_reparam"] is not None and
                rise[n] > rise[n + "_sigma_reparam"] + 0.01 for n, _ in pairs]
    figures = " ".join(f"After {what}, without and with sigma-reparam: lowest head entropy {fmt(e[n])} and "
                       f"{fmt(e[n + '_sigma_reparam'])}, largest rise of the 25-step average training loss "
                       f"{fmt(rise[n])} and {fmt(rise[n + '_sigma_reparam'])}, final val loss {fmt(val(r, n))} and "
                       f"{fmt(val(r, n + '_sigma_reparam'))}." for n, what in pairs)

    def held(oks):
        yes = [w for (_, w), ok in zip(pairs, oks) if ok]
        no = [w for (_, w), ok in zip(pairs, oks) if not ok]
        return "Held after " + (" and ".join(yes) or "neither provocation") + (
            f", not after {' and '.join(no)}" if yes and no else "")

    return [claim(verdict(raised), "Zhai et al. (2023)", "sigma-reparam keeps attention entropy from collapsing.",
                  held(raised) + f" (a lowest head entropy higher by over {BETTER} with it)."),
            claim(verdict(steadier), "Zhai et al. (2023)", "entropy collapse goes with unstable training (the loss "
                  "rises again), which sigma-reparam prevents.",
                  held(steadier) + f" (a rise larger by over 0.01 without sigma-reparam). {figures}")]


def claims_gau(r):
    g = "gau_postnorm_no_warmup"
    return [claim(verdict([outcome(r, r.results[g]) == "trained"]), "Hua et al. (2022)",
                  "GAU layers train with Post-Norm and no warmup.",
                  f"`{g}`: {outcome(r, r.results[g])}, val loss {fmt(val(r, g))}; Post-LN ended at "
                  f"{fmt(val(r, 'postln_no_warmup'))} without warmup ({outcome(r, r.results['postln_no_warmup'])}) "
                  f"and at {fmt(val(r, 'postln_warmup'))} with it.")]


def claims_realformer(r):
    return [claim(verdict([better(r, "realformer_warmup", "postln_warmup")]), "He et al. (2020)",
                  "residual attention scores (RealFormer) help Post-LN at equal steps.",
                  "Val loss at equal steps: " + ", ".join(f"`{n}` {fmt(val(r, n))}" for n in EXP5) +
                  f" (helping would take RealFormer more than {BETTER} below Post-LN).")]


def write_report(r, a, seconds):
    mode = "--quick" if a.quick else "default (GPU-sized)"
    cpu = sum(x["cpu_seconds"] for x in r.results.values())
    found = {"warmup": claims_warmup(r), "gradients": claims_gradients(r), "entropy": claims_entropy(r),
             "gau": claims_gau(r), "realformer": claims_realformer(r)}
    every = [c for part in found.values() for c in part]
    count = {s: sum(1 for c in every if c.startswith(f"**{s}.")) for s in
             ("Reproduced", "Partly reproduced", "Not reproduced")}
    summary = "\n".join(f"{i}. {c}" for i, c in enumerate(every, 1))
    section = {k: "\n".join(f"- {c}" for c in v) for k, v in found.items()}
    text = f"""# Training stability: the papers' claims, reproduced with kiln

Written by `samples/stability/reproduce.py DATA --out DIR {'--quick ' if a.quick else ''}--backend {a.backend} --seed {a.seed}`
with DATA = {os.path.basename(a.data)}
(mode {mode}, {r.jobs} run(s) at a time: {seconds / 60:.1f} minutes of wall time, {cpu / 60:.1f} CPU-minutes; the
load average was {os.getloadavg()[0]:.1f} at the end). Every run below lists its command; the seed fixes the init, the
batches and dropout, so each reproduces exactly on the same backend.

## What came out

Of {len(every)} claims, {count['Reproduced']} were reproduced, {count['Partly reproduced']} partly and
{count['Not reproduced']} not, at this small scale and with one seed. A difference of validation loss counts
when it is over {BETTER} nats; a run is stalled when it ends within {STALL} nats of the byte-unigram
cross-entropy of the data ({r.unigram:.2f} nats: it learned the bytes' frequencies and nothing about context),
and too short when it ran fewer than {TOO_SHORT_STEPS} steps without getting below that level.

{summary}

## 1. A deep Post-LN GPT without warmup, and five fixes

Xiong et al. (2020): Post-LN's gradients near the output are large at initialization, so a
large learning rate at the start derails it and it needs warmup; Pre-LN does not. ReZero,
Admin and DeepNorm keep Post-LN's (or no) normalization and fix the start instead. Admin's
profiling follows the paper's code, which counts the block input as the first residual
branch; GPT-2's token plus position embedding has a variance near 8e-4, so the omegas come
out near 0.03 (`kiln train` prints them) rather than the paper's values above 1, where the
embedding is scaled to unit variance. The figure draws Post-LN without warmup on top; each
run has its own marker, so a run whose curve runs along another's still shows.

{section['warmup']}

![loss](deep_postln.svg)

{table(r, EXP1)}

{commands(r, EXP1)}

## 2. Gradient norms per layer at initialization

The gradient norm of each block's parameters at step 1, before the first update
(`grad_norm_layers` in metrics.jsonl; the panel names its step). These runs measure and do
not train: their one step leaves them "too short".

{section['gradients']}

![grad norms](grad_norm_layers.svg)

{table(r, EXP2)}

{commands(r, EXP2)}

## 3. Attention entropy collapse and sigma-reparam

Zhai et al. (2023): attention entropy collapsing toward zero goes with unstable training;
sigma-reparam bounds the attention logits' growth. Here the collapse is provoked by a high
learning rate and by dividing the scores by a temperature of 0.05 a third of the way in.

{section['entropy']}

![entropy](entropy_collapse.svg)

{table(r, EXP3)}

{commands(r, EXP3)}

## 4. GAU with Post-Norm, without warmup

Hua et al. (2022) train FLASH's gated attention units with Post-Norm and no warmup trouble.

{section['gau']}

![gau](gau.svg)

{table(r, EXP4)}

{commands(r, EXP4[:1])}

## 5. RealFormer against Post-LN and Pre-LN

He et al. (2020): residual attention scores help Post-LN at equal steps.

{section['realformer']}

![realformer](realformer.svg)

{table(r, EXP5)}

{commands(r, ["realformer_warmup", "preln_warmup"])}
"""
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
