"""What the PyTorch parity scripts (gpt_parity.py, block_parity.py, seq2seq_parity.py,
bert_parity.py) share: the skip without torch, their command line, running `kiln dev`, one
line per check with the failures kept for the exit code, the relative error they compare
with, and the losses of the AdamW steps they replay."""
import argparse
import os
import subprocess
import sys

try:
    import numpy as np
    import torch
except ImportError as e:  # CTest reads 77 as "skipped"
    print(f"skipped: {e} (needs Debian's python3-torch and python3-numpy)")
    sys.exit(77)

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


def parity_args():
    """--kiln PATH/kiln --workdir DIR [--backend cpu|vulkan|opencl]; makes DIR, and keeps
    torch on one thread."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--backend", default="cpu")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch.set_num_threads(1)
    return args


def kiln_dev(args, name, command, *argv):
    """Runs `kiln dev COMMAND ARGV... --backend B`. Exits 77 when the backend is not
    available here; any other failure is a failed check of config NAME and returns False."""
    r = subprocess.run([args.kiln, "dev", command, *argv, "--backend", args.backend],
                       capture_output=True, text=True)
    if r.returncode == 77:
        print(f"skipped: {r.stderr.strip()}")
        sys.exit(77)
    if r.returncode:
        check(f"{name}: kiln dev {command}", False, r.stderr.strip())
        return False
    return True


def kiln_adamw(params, lr, betas, decays=lambda name, p: p.dim() == 2):
    """torch's AdamW with kiln's decay roles (weight decay 0.1 where decays(name, param):
    matrices and embeddings), eps 1e-8, over params {name: tensor}."""
    decay = [p for n, p in params.items() if decays(n, p)]
    rest = [p for n, p in params.items() if not decays(n, p)]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                             lr=lr, betas=betas, eps=1e-8)


def adamw_losses(model, steps, loss_at):
    """The loss of each of STEPS steps of model.optimizer(); loss_at(step) runs the forward
    pass and returns the loss tensor."""
    opt = model.optimizer()
    losses = []
    for step in range(steps):
        loss = loss_at(step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def run_configs(configs, run_config, seed, passed):
    """main() of a script with a table of (name, options) configurations: each runs with
    seed + its index; exit 1 when any check failed, else print PASSED."""
    args = parity_args()
    for i, (name, o) in enumerate(configs):
        run_config(args, name, o, seed + i)
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print(passed)
