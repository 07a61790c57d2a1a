"""What the PyTorch parity scripts (gpt_parity.py, block_parity.py) share: one line per
check, the failures kept for the exit code, and the relative error they compare with."""
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
