"""What the PyTorch parity scripts (gpt_parity.py, block_parity.py, seq2seq_parity.py,
bert_parity.py) share: one line per check, the failures kept for the exit code, the relative
error they compare with, the AdamW steps of a reference model, and the command line of the
scripts that run one kiln dump per configuration."""
import argparse
import os
import sys

import numpy as np

failures = []


def check(what, ok, detail):
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {detail}")
    if not ok:
        failures.append(what)


def rel_err(a, b):
    """sqrt(sum (a-b)^2 / sum b^2): NaN never passes."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if not np.all(np.isfinite(a)):
        return float("inf")
    return float(np.sqrt(np.sum((a - b) ** 2) / max(np.sum(b ** 2), 1e-30)))


def check_gradients(what, got, params, tol=1e-4):
    """got["grad.<name>"] against each torch parameter's .grad: the worst relative error."""
    worst, worst_name = 0.0, ""
    for n, p in params.items():
        e = rel_err(got["grad." + n], p.grad.numpy())
        if e > worst:
            worst, worst_name = e, n
    check(f"{what}gradients of all {len(params)} weights", worst < tol, f"worst {worst:.2e} ({worst_name})")


def check_losses(what, got, losses, tol=1e-4):
    """got["losses"]: the loss of each AdamW step, against PyTorch's."""
    e = rel_err(got["losses"], losses)
    check(f"{what}losses of {len(losses)} AdamW steps", e < tol, f"relative error {e:.2e}")


def kiln_adamw(params, lr, betas, decays=lambda name, p: p.dim() == 2):
    """torch's AdamW with kiln's decay roles (weight decay 0.1 where decays(name, param):
    matrices and embeddings), eps 1e-8, over params {name: tensor}."""
    import torch

    decay = [p for n, p in params.items() if decays(n, p)]
    rest = [p for n, p in params.items() if not decays(n, p)]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                             lr=lr, betas=betas, eps=1e-8)


def adam_losses(model, steps, loss_at):
    """The loss of each of `steps` steps of model.optimizer(); loss_at(step) computes the
    step's loss."""
    opt = model.optimizer()
    losses = []
    for step in range(steps):
        loss = loss_at(step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def parity_args():
    """The scripts' command line: --kiln, --workdir (made) and --backend; torch on one
    thread."""
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--backend", default="cpu")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch.set_num_threads(1)
    return args


def run_configs(run_config, configs, first_seed, passed):
    """The main of a script with one kiln dump per configuration: run_config(args, name,
    options, seed) for each (name, options) of configs, seeds from first_seed; exit 1 on a
    failure, else print `passed`."""
    args = parity_args()
    for i, (name, o) in enumerate(configs):
        run_config(args, name, o, first_seed + i)
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print(passed)
