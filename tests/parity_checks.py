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
