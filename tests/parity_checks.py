"""What the PyTorch parity scripts (gpt_parity.py, block_parity.py, llama_parity.py,
seq2seq_parity.py, bert_parity.py) share: the skip without torch, their command line,
running `kiln dev`, one line per check with the failures kept for the exit code, the
relative error they compare with, the losses of the AdamW steps they replay, and the replay
of a decoder-only reference model against `kiln dev parity`."""
import argparse
import os
import shutil
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
    """--kiln PATH/kiln --workdir DIR [--backend cpu|vulkan|opencl]; makes DIR afresh (kiln
    train refuses an --out that holds a previous run's checkpoint), and keeps torch on one
    thread."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--backend", default="cpu")
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    torch.set_num_threads(1)
    return args


def kiln_ok(args, name, *argv):
    """Runs kiln ARGV as given (no --backend added): its stdout, or None after a failed
    check NAME with kiln's error."""
    r = subprocess.run([args.kiln, *argv], capture_output=True, text=True)
    if r.returncode:
        check(name, False, r.stderr.strip()[-400:] or f"exit {r.returncode}")
        return None
    return r.stdout


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


class Grad:
    """check_gradients reads p.grad: a gradient mapped to kiln's layout wears that name."""

    def __init__(self, grad):
        self.grad = grad


def replay_gpt(args, name, model, seed, vocab, batch, t, steps, lr, grads=None):
    """A decoder-only reference model against `kiln dev parity` from the weights model.save
    writes: logits, loss and gradients of batch 0 (grads(): {kiln name: tensor with .grad},
    model.p by default), then the losses of STEPS AdamW steps of model.optimizer() over two
    alternating random batches [batch, t + 1] of tokens below vocab."""
    import numpy as np
    import torch
    from nanogpt_torch import load_safetensors, save_safetensors
    weights = os.path.join(args.workdir, f"{name}.safetensors")
    tokens_path = os.path.join(args.workdir, f"{name}_tokens.safetensors")
    result = os.path.join(args.workdir, f"{name}_kiln.safetensors")
    model.save(weights)
    g = torch.Generator().manual_seed(seed + 100)
    tokens = torch.randint(0, vocab, (2, batch, t + 1), generator=g)
    save_safetensors(tokens_path, {"tokens": tokens.numpy().astype(np.int64)})
    if not kiln_dev(args, name, "parity", "--ckpt", weights, "--tokens", tokens_path, "--out", result,
                    "--steps", str(steps), "--lr", str(lr), "--beta1", "0.9", "--beta2", "0.95",
                    "--weight-decay", "0.1", "--clip", "0"):
        return
    got, _ = load_safetensors(result)
    logits, loss = model(tokens[0, :, :-1], tokens[0, :, 1:])
    loss.backward()
    e = rel_err(got["logits"], logits.detach().numpy())
    check(f"{name}: logits", e < 1e-5, f"relative error {e:.2e}")
    check_gradients(f"{name}: ", got, grads() if grads else model.p)
    losses = adamw_losses(model, steps, lambda step: model(tokens[step % 2, :, :-1], tokens[step % 2, :, 1:])[1])
    check_losses(f"{name}: ", got, losses)


def finish(passed="PASSED"):
    """The end of a check script: exit 1 when any check failed, else print passed."""
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print(passed)


def run_configs(configs, run_config, seed, passed):
    """main() of a script with a table of (name, options) configurations: each runs with
    seed + its index; exit 1 when any check failed, else print PASSED."""
    args = parity_args()
    for i, (name, o) in enumerate(configs):
        run_config(args, name, o, seed + i)
    finish(passed)
