#!/usr/bin/env python3
"""PyTorch's torch.matmul (cuBLAS on CUDA) at the GEMM shapes of `kiln bench --json` results:
the peer of kiln's GEMM figures in scripts/gpu/run.sh's report.

  torch_matmul.py [--device cuda] [--repeat N] [--json FILE] BENCH.json...

For every figure gemm.<dtype>.<layout> that kiln measured, it times torch.matmul at the same
shape (kiln's MxNxK: C[M,N] = op(A)[M,K] op(B)[K,N]; nn: A B, nt: A B^T, tn: A^T B) and prints
kiln's GFLOP/s, PyTorch's and kiln / PyTorch. f32 runs with TF32 off, torch's default and
kiln's arithmetic; f16 multiplies f16 inputs with f32 accumulation (reduced-precision
reductions off) and, unlike kiln's f16->f32 GEMM, writes f16. Each figure is the median of
--repeat timed products (CUDA events) after three untimed ones.
"""
import argparse
import json
import sys

import torch


def gemm_figures(paths):
    """(device id, key, shape (m, n, k), kiln GFLOP/s) for each measured GEMM figure."""
    for path in paths:
        with open(path) as f:
            run = json.load(f)
        for dev in run["devices"]:
            for fig in dev["figures"]:
                if fig["key"].startswith("gemm.") and fig.get("shape") and fig.get("median") is not None:
                    m, n, k = (int(v) for v in fig["shape"].split("x"))
                    yield dev["id"], fig["key"], (m, n, k), fig["median"]


def operands(layout, m, n, k, dtype, device):
    g = torch.Generator(device="cpu").manual_seed(1)
    a_shape = (k, m) if layout == "tn" else (m, k)
    b_shape = (n, k) if layout == "nt" else (k, n)
    a = (torch.rand(a_shape, generator=g) * 2 - 1).to(device=device, dtype=dtype)
    b = (torch.rand(b_shape, generator=g) * 2 - 1).to(device=device, dtype=dtype)
    return (a.t() if layout == "tn" else a), (b.t() if layout == "nt" else b)


def seconds(fn, device, repeat):
    """Median seconds of one fn() over repeat timed runs after three untimed ones."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeat):
        if device.startswith("cuda"):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            import time
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("bench", nargs="+", help="kiln bench --json result files")
    p.add_argument("--device", default="cuda")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--json", help="also write the rows to FILE")
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    try:
        torch.empty(1, device=args.device)
    except (RuntimeError, AssertionError) as e:
        sys.exit(f"torch_matmul: --device {args.device}: {str(e).splitlines()[0]}")
    name = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else args.device
    print(f"torch {torch.__version__} on {name}")
    rows = []
    for dev_id, key, (m, n, k), kiln_gflops in gemm_figures(args.bench):
        _, dtype_name, layout = key.split(".")
        dtype = torch.float16 if dtype_name == "f16" else torch.float32
        shape = f"{m}x{n}x{k}"
        row = {"device": dev_id, "key": key, "shape": shape, "kiln_gflops": kiln_gflops}
        try:
            a, b = operands(layout, m, n, k, dtype, args.device)
            secs = seconds(lambda: torch.matmul(a, b), args.device, args.repeat)
        except RuntimeError as e:  # a dtype the device lacks: the row says so, the others go on
            row["error"] = str(e).splitlines()[0]
            print(f"{dev_id:10} {key:14} {shape:16}  kiln {kiln_gflops:10.1f}  torch n/a: {row['error']}")
            rows.append(row)
            continue
        row["torch_gflops"] = 2.0 * m * n * k / secs / 1e9
        row["kiln_over_torch"] = kiln_gflops / row["torch_gflops"]
        rows.append(row)
        print(f"{dev_id:10} {key:14} {shape:16}  kiln {kiln_gflops:10.1f}  torch {row['torch_gflops']:10.1f} GFLOP/s"
              f"  kiln/torch {row['kiln_over_torch']:.3f}")
    if not rows:
        sys.exit("torch_matmul: no GEMM figures in " + " ".join(args.bench))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "device": name, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
