#!/usr/bin/python3
"""Prints torch.optim trajectories for tests/test_op_optim.c --torch-reference FILE.

Each scenario fixes its inputs here (f32 values, printed exactly), runs torch.optim.AdamW,
torch.optim.Adam (L2 decay) or torch.optim.RAdam (L2 decay, as torch 1.13 has it) with
torch.nn.utils.clip_grad_norm_, and prints, per step, the
learning rate, the gradients, the pre-clip global norm and the parameters after the step.
The C test replays the same inputs through kiln_adam_step and compares. Exits 77 (CTest
"skipped") when torch is not installed. Run with Debian's /usr/bin/python3."""
import sys

try:
    import torch
except ImportError:
    print("skipping: torch is not installed for", sys.executable, file=sys.stderr)
    sys.exit(77)


def words(t):
    # repr of a float64 that holds an f32 value round-trips that f32 exactly
    return " ".join(repr(float(x)) for x in t.detach().double().flatten().tolist())


ADAM_L2, ADAMW, RADAM_L2 = 0, 1, 2  # the mode the C side reads: decoupled, rectified


def scenario(name, mode, b1, b2, eps, wd, clip, steps, sizes, decay, seed):
    gen = torch.Generator().manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(n, generator=gen, dtype=torch.float32)) for n in sizes]
    groups = [{"params": [p], "weight_decay": wd if d else 0.0} for p, d in zip(params, decay)]
    cls = {ADAM_L2: torch.optim.Adam, ADAMW: torch.optim.AdamW, RADAM_L2: torch.optim.RAdam}[mode]
    opt = cls(groups, lr=1.0, betas=(b1, b2), eps=eps, foreach=False)
    # the hyperparameters as the f32 values kiln will hold
    f32 = lambda x: float(torch.tensor(x, dtype=torch.float32))
    print("scenario", name, mode, f32(b1), f32(b2), f32(eps), f32(wd), f32(clip), steps, len(sizes))
    for j, (p, d) in enumerate(zip(params, decay)):
        print("param", j, p.numel(), d)
        print(words(p))
    for t in range(1, steps + 1):
        lr = f32(1e-2 * min(1.0, t / 3) * (0.9 ** t))  # warm-up then decay, as a schedule does
        for g in opt.param_groups:
            g["lr"] = lr
        for p in params:
            p.grad = torch.randn(p.shape, generator=gen, dtype=torch.float32) * (2.0 if t % 2 else 0.5)
        print("step", t, lr)
        for p in params:
            print(words(p.grad))
        norm = torch.nn.utils.clip_grad_norm_(params, clip if clip > 0 else float("inf"))
        print(repr(float(norm)))
        opt.step()
        for p in params:
            print(words(p))
    print("end")


torch.manual_seed(0)
scenario("adamw_clip", ADAMW, 0.9, 0.95, 1e-8, 0.1, 1.0, 7, [33, 12, 1], [1, 1, 0], 1)
scenario("adamw_noclip", ADAMW, 0.9, 0.999, 1e-6, 0.01, 0.0, 5, [17, 4], [1, 0], 2)
scenario("adam_l2_clip", ADAM_L2, 0.8, 0.99, 1e-8, 0.05, 3.0, 6, [21, 5], [1, 0], 3)
# beta2 0.9: the variance becomes tractable (rho_t > 5) at step 6, so both phases run
scenario("radam_l2", RADAM_L2, 0.9, 0.9, 1e-8, 0.05, 0.0, 10, [19, 6], [1, 0], 4)
